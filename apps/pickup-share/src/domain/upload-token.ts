import { createHmac } from 'node:crypto'
import type { Clock } from '@quartet/core/clock'
import { ApiError } from '@quartet/core/errors'
import { safeEqual } from '@quartet/core/auth'

/** What a blob upload token grants: one pathname on one instance, a byte cap, until a moment. */
export interface UploadClaims {
  instance: string
  pathname: string
  /** The declared size: the body must be exactly this long (null: a token from before sizes were enforced). */
  size: number | null
  maxBytes: number | null
  expiresAt: Date
  allowOverwrite: boolean
  /** The pathname the client named (a Vercel blob client token): the upload must name it again. */
  alias?: string | undefined
}

/**
 * HMAC-SHA256 signed upload tokens for PUT /api/blob/upload: `<base64url claims>.<base64url mac>`.
 * Stateless, so any replica sharing UPLOAD_TOKEN_SECRET accepts them.
 */
export class UploadTokens {
  constructor(
    private readonly secret: string,
    private readonly clock: Clock,
  ) {}

  sign(claims: UploadClaims): string {
    const payload = Buffer.from(
      JSON.stringify({
        i: claims.instance,
        p: claims.pathname,
        s: claims.size,
        m: claims.maxBytes,
        e: claims.expiresAt.getTime(),
        o: claims.allowOverwrite,
        ...(claims.alias !== undefined ? { a: claims.alias } : {}),
      }),
    ).toString('base64url')
    return `${payload}.${this.mac(payload)}`
  }

  verify(token: string | undefined): UploadClaims {
    if (!token) throw new ApiError('upload_token_invalid', 'the X-Upload-Token header is missing')
    const [payload, mac, extra] = token.split('.')
    if (!payload || !mac || extra !== undefined || !safeEqual(mac, this.mac(payload)))
      throw new ApiError('upload_token_invalid', 'the upload token is not valid')
    let raw: { i?: unknown; p?: unknown; s?: unknown; m?: unknown; e?: unknown; o?: unknown; a?: unknown }
    try {
      raw = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'))
    } catch {
      throw new ApiError('upload_token_invalid', 'the upload token is not valid')
    }
    if (
      typeof raw.i !== 'string' ||
      typeof raw.p !== 'string' ||
      !(raw.s === undefined || raw.s === null || typeof raw.s === 'number') ||
      !(raw.m === null || typeof raw.m === 'number') ||
      typeof raw.e !== 'number' ||
      typeof raw.o !== 'boolean' ||
      !(raw.a === undefined || typeof raw.a === 'string')
    )
      throw new ApiError('upload_token_invalid', 'the upload token is not valid')
    if (raw.e <= this.clock.now().getTime())
      throw new ApiError('upload_token_expired', 'the upload permission has expired; ask for a new one')
    return {
      instance: raw.i,
      pathname: raw.p,
      size: typeof raw.s === 'number' ? raw.s : null,
      maxBytes: raw.m as number | null,
      expiresAt: new Date(raw.e),
      allowOverwrite: raw.o,
      ...(typeof raw.a === 'string' ? { alias: raw.a } : {}),
    }
  }

  /**
   * The uploader's proof for one permission (issue 48 item 2): only it turns the upload into a
   * share. An HMAC of the instance and pathname under a key of its own derived from the token
   * secret, so nothing is stored and every replica sharing UPLOAD_TOKEN_SECRET recognises it.
   */
  proofOf(instance: string, pathname: string): string {
    return createHmac('sha256', this.proofKey).update(`${instance}\n${pathname}`).digest('base64url')
  }

  /** Whether `proof` is the proof of this permission (constant-time; any input is a plain no). */
  proves(instance: string, pathname: string, proof: string): boolean {
    return safeEqual(proof, this.proofOf(instance, pathname))
  }

  private get proofKey(): Buffer {
    return createHmac('sha256', this.secret).update('pickup-share upload proof').digest()
  }

  /**
   * The unguessable part of a resumable (tus) upload's URL (issue 48 item 2): a pathname may leak
   * (a log, a proxy, a shoulder), and in tus the URL is what lets a client write, resume or cancel
   * the upload, so the URL must not follow from the pathname. 128 bits of HMAC-SHA256 of the
   * instance and pathname under a key of its own derived from the token secret: not the proof's
   * key, so a URL read in a proxy log does not also let its reader share the upload. Stateless
   * like the proof: every replica sharing UPLOAD_TOKEN_SECRET recognises it.
   */
  tusUrlTag(instance: string, pathname: string): string {
    return createHmac('sha256', this.tusUrlKey)
      .update(`${instance}\n${pathname}`)
      .digest()
      .subarray(0, 16)
      .toString('base64url')
  }

  /** Whether `tag` is the tus URL tag of this upload (constant-time; any input is a plain no). */
  isTusUrlTag(instance: string, pathname: string, tag: string): boolean {
    return safeEqual(tag, this.tusUrlTag(instance, pathname))
  }

  private get tusUrlKey(): Buffer {
    return createHmac('sha256', this.secret).update('pickup-share tus-url').digest()
  }

  private mac(payload: string): string {
    return createHmac('sha256', this.secret).update(payload).digest('base64url')
  }
}
