import { fixedClock } from '@quartet/core/clock'
import { UploadTokens } from '../../src/domain/upload-token.ts'

describe('upload tokens', () => {
  const clock = fixedClock('2026-11-22T12:00:00Z')
  const tokens = new UploadTokens('a-secret-of-at-least-thirty-two-characters', clock)
  const claims = {
    instance: 'blob',
    pathname: 'abc/file.txt',
    size: 42,
    maxBytes: 100,
    expiresAt: new Date('2026-11-22T13:00:00Z'),
    allowOverwrite: false,
  }

  it('when a token is signed, then it verifies to the same claims', () => {
    expect(tokens.verify(tokens.sign(claims))).toEqual(claims)
  })

  it('when the claims are altered or the key differs, then it is refused as invalid', () => {
    const [payload, mac] = tokens.sign(claims).split('.')
    const altered = Buffer.from(
      JSON.stringify({ i: 'blob', p: 'abc/other.txt', m: 100, e: claims.expiresAt.getTime(), o: false }),
    ).toString('base64url')
    expect(() => tokens.verify(`${altered}.${mac}`)).toThrow(
      expect.objectContaining({ code: 'upload_token_invalid' }),
    )
    expect(() => tokens.verify(`${payload}.${mac}x`)).toThrow(
      expect.objectContaining({ code: 'upload_token_invalid' }),
    )
    const other = new UploadTokens('another-secret-of-at-least-thirty-two-chars', clock)
    expect(() => other.verify(tokens.sign(claims))).toThrow(
      expect.objectContaining({ code: 'upload_token_invalid' }),
    )
    expect(() => tokens.verify(undefined)).toThrow(expect.objectContaining({ code: 'upload_token_invalid' }))
    expect(() => tokens.verify('a.b.c')).toThrow(expect.objectContaining({ code: 'upload_token_invalid' }))
  })

  it('when the token has expired, then it is refused as expired', () => {
    const token = tokens.sign(claims)
    clock.set('2026-11-22T13:00:00Z')
    expect(() => tokens.verify(token)).toThrow(expect.objectContaining({ code: 'upload_token_expired' }))
  })
})
