import { Client } from 'minio'
import { presignV4 } from '../../src/drivers/s3-presign.ts'

// The signer must agree with an independent SigV4 implementation (minio's) wherever both sign
// the same headers; then signing one more header (content-length) is the only difference.
describe('SigV4 query presigning', () => {
  const date = new Date('2026-11-22T18:30:15.000Z')
  const clients = [
    new Client({
      endPoint: '127.0.0.1',
      port: 9000,
      useSSL: false,
      accessKey: 'AKID',
      secretKey: 'SECRET/key+1',
      region: 'us-east-1',
      pathStyle: true,
    }),
    new Client({
      endPoint: 's3.example.com',
      useSSL: true,
      accessKey: 'AKID2',
      secretKey: 'other',
      region: 'eu-west-3',
      pathStyle: false,
    }),
  ]

  it.each([
    [0, 'abc123/report.pdf'],
    [0, 'd/name with spaces & (parens)*!.txt'],
    [1, 'e/ü-ß.bin'],
  ])(
    "when only host is signed, then the URL equals minio's for the same date (client %i, key %j)",
    async (i, key) => {
      const client = clients[i]!
      const minio = await client.presignedUrl('PUT', 'bucket-1', key, 900, {}, date)
      const ours = presignV4({
        url: minio,
        method: 'PUT',
        region: i === 0 ? 'us-east-1' : 'eu-west-3',
        accessKey: i === 0 ? 'AKID' : 'AKID2',
        secretKey: i === 0 ? 'SECRET/key+1' : 'other',
        expiresSeconds: 900,
        date,
        headers: {},
      })
      const a = new URL(minio)
      const b = new URL(ours)
      expect(b.origin + b.pathname).toBe(a.origin + a.pathname)
      expect(Object.fromEntries(b.searchParams)).toEqual(Object.fromEntries(a.searchParams))
    },
  )

  it('when content-length is signed, then it is listed and the signature changes with the length', () => {
    const base = 'http://127.0.0.1:9000/bucket-1/k.bin'
    const sign = (length: string) =>
      new URL(
        presignV4({
          url: base,
          method: 'PUT',
          region: 'us-east-1',
          accessKey: 'AKID',
          secretKey: 's',
          expiresSeconds: 60,
          date,
          headers: { 'content-length': length },
        }),
      ).searchParams
    expect(sign('10').get('X-Amz-SignedHeaders')).toBe('content-length;host')
    expect(sign('10').get('X-Amz-Signature')).not.toBe(sign('11').get('X-Amz-Signature'))
  })
})
