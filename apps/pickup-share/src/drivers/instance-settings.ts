import { z } from 'zod'
import { isMirrorTemplate, MIRROR_TEMPLATE_RULE } from './mirrors.ts'

/** Connection settings of admin-defined instances, per kind (credentials are write-only). */
export const ZBlobSettings = z.object({}).strict()

export const ZBucketSettings = z
  .object({
    endpoint: z
      .url()
      .refine((v) => /^https?:\/\//.test(v), 'must be an http:// or https:// URL')
      .describe('http(s)://host:port of the S3-compatible server'),
    bucket: z.string().min(3).max(63),
    region: z.string().min(1).max(64).default('us-east-1'),
    pathStyle: z.boolean().default(true),
    postPolicy: z.boolean().default(true),
    accessKey: z.string().min(1).max(256).optional(),
    secretKey: z.string().min(1).max(256).optional(),
  })
  .strict()

export const ZRepoSettings = z
  .object({
    /** Smart-HTTP remote, e.g. https://github.com/acme/drop.git (no credentials in the URL). */
    remoteUrl: z
      .url()
      .refine((v) => /^https?:\/\//.test(v), 'must be an http:// or https:// URL')
      .refine((v) => {
        const u = new URL(v)
        return !u.username && !u.password
      }, 'must not carry credentials; set token instead'),
    branch: z
      .string()
      .regex(/^[A-Za-z0-9._/-]{1,100}$/)
      .refine((v) => !v.includes('..') && !v.startsWith('/') && !v.endsWith('/'), 'not a valid branch name')
      .default('main'),
    /** Owner and repository name for mirror templates; taken from remoteUrl's path when missing. */
    owner: z
      .string()
      .regex(/^[A-Za-z0-9._-]{1,100}$/)
      .optional(),
    repo: z
      .string()
      .regex(/^[A-Za-z0-9._-]{1,100}$/)
      .optional(),
    /**
     * Download mirrors of this repository (URL templates as in REPO_MIRRORS); absent: the
     * operator's REPO_MIRRORS, empty: none.
     */
    mirrors: z.array(z.string().max(500).refine(isMirrorTemplate, MIRROR_TEMPLATE_RULE)).max(8).optional(),
    /** HTTP basic user sent with the token (x-access-token for GitHub, oauth2 for GitLab). */
    username: z.string().min(1).max(100).default('x-access-token'),
    token: z.string().min(1).max(1000).optional(),
  })
  .strict()

export type TBucketSettings = z.infer<typeof ZBucketSettings>
export type TRepoSettings = z.infer<typeof ZRepoSettings>

/** Turns zod issues into one readable message (the factory throws it; admin answers 400). */
export function parseSettings<T>(schema: z.ZodType<T>, value: unknown): T {
  const parsed = schema.safeParse(value)
  if (!parsed.success)
    throw new Error(
      parsed.error.issues.map((i) => `${i.path.join('.') || 'settings'}: ${i.message}`).join('; '),
    )
  return parsed.data
}
