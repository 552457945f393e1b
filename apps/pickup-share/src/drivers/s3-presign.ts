import { createHash, createHmac } from 'node:crypto'

/**
 * AWS Signature V4 query presigning of a URL the minio client already built (host, bucket
 * addressing and key encoding stay minio's), with more headers signed than minio signs.
 *
 * minio presigns only `host`: its presigned PUT accepts a body of any length. Signing
 * `content-length` too pins the length: S3, MinIO and R2 recompute the signature from the header
 * the client actually sends, so any other length is refused with 403 SignatureDoesNotMatch
 * before the object is stored. (AWS SigV4: canonical request → string to sign → HMAC chain.)
 */
export interface PresignInput {
  /** A URL as minio's presignedUrl returns it; its X-Amz-* parameters are replaced. */
  url: string
  method: string
  region: string
  accessKey: string
  secretKey: string
  expiresSeconds: number
  date: Date
  /** Headers the client must send with exactly these values (lower-case names); `host` is added. */
  headers: Record<string, string>
}

const ALGORITHM = 'AWS4-HMAC-SHA256'

/** RFC 3986 encoding, as SigV4 wants it (encodeURIComponent leaves !'()* alone). */
const escape = (s: string) =>
  encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex')
const hmac = (key: Buffer | string, s: string) => createHmac('sha256', key).update(s).digest()

export function presignV4(input: PresignInput): string {
  const url = new URL(input.url)
  for (const key of [...url.searchParams.keys()])
    if (key.toLowerCase().startsWith('x-amz-')) url.searchParams.delete(key)
  const iso = input.date.toISOString()
  const amzDate = `${iso.slice(0, 4)}${iso.slice(5, 7)}${iso.slice(8, 13)}${iso.slice(14, 16)}${iso.slice(17, 19)}Z`
  const day = amzDate.slice(0, 8)
  const scope = `${day}/${input.region}/s3/aws4_request`
  const headers: Record<string, string> = { host: url.host }
  for (const [k, v] of Object.entries(input.headers)) headers[k.toLowerCase()] = v
  const names = Object.keys(headers).sort()
  const signedHeaders = names.join(';')

  const params: Array<[string, string]> = [...url.searchParams.entries()]
  params.push(
    ['X-Amz-Algorithm', ALGORITHM],
    ['X-Amz-Credential', `${input.accessKey}/${scope}`],
    ['X-Amz-Date', amzDate],
    ['X-Amz-Expires', String(input.expiresSeconds)],
    ['X-Amz-SignedHeaders', signedHeaders],
  )
  const query = params
    .map(([k, v]) => `${escape(k)}=${escape(v)}`)
    .sort()
    .join('&')
  const canonicalRequest = [
    input.method.toUpperCase(),
    url.pathname,
    query,
    names.map((n) => `${n}:${headers[n]!.trim().replace(/ +/g, ' ')}\n`).join(''),
    signedHeaders,
    'UNSIGNED-PAYLOAD',
  ].join('\n')
  const stringToSign = [ALGORITHM, amzDate, scope, sha256(canonicalRequest)].join('\n')
  const key = hmac(hmac(hmac(hmac(`AWS4${input.secretKey}`, day), input.region), 's3'), 'aws4_request')
  const signature = createHmac('sha256', key).update(stringToSign).digest('hex')
  return `${url.protocol}//${url.host}${url.pathname}?${query}&X-Amz-Signature=${signature}`
}
