import { baseConfigShape, type Env, loadConfig, zBool, zInt } from '@quartet/core/config'
import { z } from 'zod'
import { isMirrorTemplate, MIRROR_TEMPLATE_RULE } from './drivers/mirrors.ts'

const optionalString = z.string().optional()

export const ZConfig = z
  .object({
    ...baseConfigShape({ port: 3004, schema: 'pickup_share', appName: 'pickup-share' }),
    /** Folder of the local-disk store ("blob"). */
    BLOB_DIR: z.string().default('.data/blobs'),
    /** S3-compatible bucket store ("bucket"); enabled only when endpoint, keys and bucket are all set. */
    S3_ENDPOINT: z
      .url({ message: 'must be a URL with scheme, e.g. http://s3.localhost:8080' })
      .refine((v) => /^https?:\/\//.test(v), 'must be an http:// or https:// URL')
      .optional(),
    S3_ACCESS_KEY: optionalString,
    S3_SECRET_KEY: optionalString,
    S3_BUCKET: optionalString,
    S3_REGION: z.string().default('us-east-1'),
    /** Use S3 virtual-host addressing (bucket.host); path style (host/bucket) otherwise. */
    S3_PATH_STYLE: zBool(true),
    /** Presigned POST policies (exact key + content-length-range); false: presigned PUT + size check. */
    S3_POST_POLICY: zBool(true),
    /** Create the bucket at start-up when it is missing. */
    S3_CREATE_BUCKET: zBool(false),
    /** scrypt hash (`pnpm cli hash-password`) of the admin password; wins over ADMIN_PASSWORD. */
    ADMIN_PASSWORD_HASH: optionalString,
    ADMIN_PASSWORD: optionalString,
    /** HMAC key of blob upload tokens (≥ 32 chars); random per process when unset (single node). */
    UPLOAD_TOKEN_SECRET: z.string().min(32, 'must be at least 32 characters').optional(),
    /**
     * How long an upload permission stays valid; its upload must begin within
     * UPLOAD_IDLE_RELEASE_SECONDS, or its reserved bytes go back (plus a sweep).
     */
    UPLOAD_TOKEN_TTL_SECONDS: zInt(1800, 60, 7 * 24 * 3600),
    /**
     * How long a resumable (tus) upload may be resumed after its creation; an unfinished one is
     * removed then and its reservation given back (sweep).
     */
    TUS_EXPIRY_SECONDS: zInt(86_400, 1, 7 * 24 * 3600),
    /** Upload permissions per client (IPv4 address, IPv6 /64) per UPLOAD_LIMIT_WINDOW_SECONDS. */
    UPLOAD_PERMISSIONS_PER_ADDRESS: zInt(120, 1, 1_000_000),
    /** Upload permissions of everyone together per UPLOAD_LIMIT_WINDOW_SECONDS. */
    UPLOAD_PERMISSIONS_GLOBAL: zInt(6000, 1, 1_000_000_000),
    UPLOAD_LIMIT_WINDOW_SECONDS: zInt(600, 1, 86_400),
    /** Bytes one client may hold in upload permissions not shared yet (default 10 GiB). */
    UPLOAD_PENDING_BYTES_PER_ADDRESS: zInt(10 * 1024 ** 3, 1, Number.MAX_SAFE_INTEGER),
    /** Bytes everyone together may hold in upload permissions not shared yet (default 100 GiB). */
    UPLOAD_PENDING_BYTES_GLOBAL: zInt(100 * 1024 ** 3, 1, Number.MAX_SAFE_INTEGER),
    /**
     * The share of a store's capacity (the quotas of the kind's enabled instances) one client may
     * hold there in permissions not shared yet, beside UPLOAD_PENDING_BYTES_PER_ADDRESS; a client
     * holding nothing there may always take one permission; 1 switches this bound off (README
     * "Limits on upload permissions").
     */
    UPLOAD_PENDING_STORE_FRACTION: z.coerce
      .number({ message: 'must be a number' })
      .gt(0, 'must be more than 0')
      .max(1, 'must be at most 1')
      .default(0.25),
    /**
     * A permission whose upload has not begun this long after it was granted is released (its
     * reservation given back; a bucket's direct upload must begin within it and gets 10 more minutes
     * to arrive). At most UPLOAD_TOKEN_TTL_SECONDS counts.
     */
    UPLOAD_IDLE_RELEASE_SECONDS: zInt(300, 1, 7 * 24 * 3600),
    /** Unshared uploads older than this are orphans: share refuses them, cleanup removes them. */
    ORPHAN_AFTER_HOURS: zInt(24, 1, 24 * 365),
    /**
     * How long after its first request a download may be resumed for free by the same receiver
     * (README "Downloads: what one download buys").
     */
    DOWNLOAD_RESUME_WINDOW_SECONDS: zInt(86_400, 60, 30 * 86_400),
    /**
     * A download's byte budget beyond twice the file's size, at most the size once more:
     * budget = 2 × size + min(size, this) (README "Downloads: what one download buys").
     */
    DOWNLOAD_RESUME_SLACK_BYTES: zInt(16 * 1024 * 1024, 0, Number.MAX_SAFE_INTEGER),
    /** Sweeper period (expired shares, orphans); 0 switches the in-process sweeper off. */
    SWEEP_INTERVAL_SECONDS: zInt(300, 0, 86_400),
    /** Git repository store ("repo"): smart-HTTP remote, no credentials in the URL (REPO_TOKEN). */
    REPO_REMOTE_URL: z
      .url({ message: 'must be a URL, e.g. https://github.com/acme/drop.git' })
      .refine((v) => /^https?:\/\//.test(v), 'must be an http:// or https:// URL')
      .refine((v) => !new URL(v).username && !new URL(v).password, 'put the token in REPO_TOKEN, not the URL')
      .optional(),
    /** Access token sent as HTTP basic password (never logged, never returned). */
    REPO_TOKEN: optionalString,
    /** Basic user sent with the token: x-access-token (GitHub), oauth2 (GitLab), any (Gitea). */
    REPO_USERNAME: z.string().default('x-access-token'),
    REPO_BRANCH: z.string().default('main'),
    /** {owner}/{repo} of the mirror templates; taken from REPO_REMOTE_URL's path when unset. */
    REPO_OWNER: optionalString,
    REPO_NAME: optionalString,
    /** Per-file cap of the git host (GitHub refuses files above 100 MB). */
    REPO_MAX_FILE_BYTES: zInt(104_857_600, 1, Number.MAX_SAFE_INTEGER),
    /** Local bare clones (a cache: safe to delete). */
    REPO_CACHE_DIR: z.string().default('.data/repos'),
    /** Comma-separated mirror URL templates with {owner} {repo} {sha} {path}. */
    REPO_MIRRORS: z
      .string()
      .optional()
      .transform((v) =>
        v
          ? v
              .split(',')
              .map((s) => s.trim())
              .filter(Boolean)
          : [],
      )
      .refine((list) => list.every(isMirrorTemplate), MIRROR_TEMPLATE_RULE),
    /** How long a mirror ranking stays cached in kv. */
    REPO_MIRROR_TTL_SECONDS: zInt(600, 1, 86_400),
    /** Extra origins the web pages may upload to (connect-src), e.g. a bucket store added at run time. */
    WEB_CONNECT_SRC: z
      .string()
      .optional()
      .transform((v) =>
        v
          ? v
              .split(',')
              .map((s) => s.trim().replace(/\/$/, ''))
              .filter(Boolean)
          : [],
      ),
    /** Origins allowed on state-changing admin requests; default: the request's own origin. */
    ADMIN_ALLOWED_ORIGINS: z
      .string()
      .optional()
      .transform((v) =>
        v
          ? v
              .split(',')
              .map((s) => s.trim().replace(/\/$/, ''))
              .filter(Boolean)
          : [],
      ),
  })
  .superRefine((c, ctx) => {
    const s3 = [c.S3_ENDPOINT, c.S3_ACCESS_KEY, c.S3_SECRET_KEY, c.S3_BUCKET]
    if (s3.some(Boolean) && !s3.every(Boolean))
      ctx.addIssue({
        code: 'custom',
        path: ['S3_ENDPOINT'],
        message: 'S3_ENDPOINT, S3_ACCESS_KEY, S3_SECRET_KEY and S3_BUCKET must be set together',
      })
  })
export type TConfig = z.infer<typeof ZConfig>

/** Every variable may also carry the app prefix (PICKUP_SHARE_PORT wins over PORT). */
export const loadAppConfig = (env?: Env): TConfig => loadConfig(ZConfig, { prefix: 'PICKUP_SHARE', env })
