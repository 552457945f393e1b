import { z } from 'zod'
import { isEceLength } from '../domain/share-encryption.ts'

/** base64url without padding, as the pages write salts and encrypted blobs. */
const base64url = (min: number, max: number) =>
  z
    .string()
    .min(min)
    .max(max)
    .regex(/^[A-Za-z0-9_-]+$/, 'must be base64url')

/**
 * What POST /api/share takes for an end-to-end encrypted share (README "End-to-end encrypted
 * shares"). Never a key: the server could not tell one from the rest, so nothing here is one.
 */
export const ZShareEncryption = z
  .object({
    scheme: z.literal('aes128gcm'),
    recordSize: z.number().int().min(1024).max(1_048_576),
    key: z.enum(['link', 'passphrase']),
    kdf: z
      .object({
        name: z.literal('PBKDF2-SHA256'),
        salt: base64url(22, 64),
        iterations: z.number().int().min(100_000).max(10_000_000),
      })
      .strict()
      .optional(),
    /** The files' names and types, one aes128gcm body (base64url); at most 100 files of 255-byte names. */
    names: base64url(52, 131_072),
  })
  .strict()
  .refine((e) => (e.key === 'passphrase') === (e.kdf !== undefined), {
    message: 'kdf is given exactly when the key comes from a passphrase',
    path: ['kdf'],
  })

/**
 * An encrypted share's files are aes128gcm bodies: each size must be one the record size allows
 * (the sizes the server enforces are the ciphertext's). A size between is refused before anything
 * is looked up, at the field.
 */
export function checkEncryptedSizes(
  v: { files: Array<{ size: number }>; encryption?: { recordSize: number } | undefined },
  ctx: z.RefinementCtx,
): void {
  if (!v.encryption) return
  const rs = v.encryption.recordSize
  v.files.forEach((f, i) => {
    if (!isEceLength(f.size, rs))
      ctx.addIssue({
        code: 'custom',
        path: ['files', i, 'size'],
        message: `is not the size of an aes128gcm body with records of ${rs} bytes`,
      })
  })
}
