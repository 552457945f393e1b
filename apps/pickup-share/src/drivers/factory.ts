import { createHash } from 'node:crypto'
import path from 'node:path'
import type { KeyValueStore } from '@quartet/core/kv'
import type { Logger } from '@quartet/core/log'
import { type StorageDriver, StorageRegistry, type StoreKind } from '../domain/storage.ts'
import type { UploadTokens } from '../domain/upload-token.ts'
import type { TConfig } from '../config.ts'
import type { Db } from '../store/db.ts'
import { RepoObjectRepository } from '../store/repo-object-repository.ts'
import { BlobDriver } from './blob-driver.ts'
import { BucketDriver } from './bucket-driver.ts'
import {
  parseSettings,
  type TRepoSettings,
  ZBlobSettings,
  ZBucketSettings,
  ZRepoSettings,
} from './instance-settings.ts'
import { MirrorSelector } from './mirrors.ts'
import { RepoDriver } from './repo-driver.ts'

/** The config the storage drivers read: BLOB_DIR and the built-in repo instance's REPO_* variables. */
export type FactoryConfig = Pick<TConfig, 'BLOB_DIR'> &
  Partial<
    Pick<
      TConfig,
      | 'REPO_REMOTE_URL'
      | 'REPO_TOKEN'
      | 'REPO_USERNAME'
      | 'REPO_BRANCH'
      | 'REPO_OWNER'
      | 'REPO_NAME'
      | 'REPO_MAX_FILE_BYTES'
      | 'REPO_CACHE_DIR'
      | 'REPO_MIRRORS'
      | 'REPO_MIRROR_TTL_SECONDS'
    >
  >

export interface FactoryDeps {
  config: FactoryConfig
  tokens: UploadTokens
  db: Db
  kv: KeyValueStore
  logger: Logger
}

/** {owner}/{repo} from a remote's path: /acme/drop.git → acme, drop (GitLab groups: a/b/c → a/b, c). */
export function ownerAndRepo(remoteUrl: string): { owner: string; repo: string } {
  const parts = new URL(remoteUrl).pathname
    .replace(/\.git\/?$/, '')
    .split('/')
    .filter(Boolean)
  const repo = parts.pop() ?? ''
  return { owner: parts.join('/'), repo }
}

/** One mirror selector per list of templates per process (the operator's, each instance's own). */
const selectors = new WeakMap<KeyValueStore, Map<string, MirrorSelector>>()
function mirrorsFor(d: FactoryDeps, own?: string[]): MirrorSelector | null {
  const templates = own ?? d.config.REPO_MIRRORS ?? []
  if (templates.length === 0) return null
  let byList = selectors.get(d.kv)
  if (!byList) selectors.set(d.kv, (byList = new Map()))
  const list = templates.join('\n')
  let s = byList.get(list)
  if (!s) {
    const ttlMs = (d.config.REPO_MIRROR_TTL_SECONDS ?? 600) * 1000
    const keyPrefix = own
      ? `mirror-rank:${createHash('sha256').update(list).digest('base64url').slice(0, 12)}:`
      : undefined
    s = new MirrorSelector({ templates, kv: d.kv, ttlMs, ...(keyPrefix ? { keyPrefix } : {}) })
    byList.set(list, s)
  }
  return s
}

export function repoDriver(d: FactoryDeps, id: string, s: TRepoSettings): RepoDriver {
  const derived = ownerAndRepo(s.remoteUrl)
  return new RepoDriver({
    instance: id,
    remoteUrl: s.remoteUrl,
    branch: s.branch,
    username: s.username,
    token: s.token,
    owner: s.owner ?? derived.owner,
    repo: s.repo ?? derived.repo,
    cacheDir: path.join(d.config.REPO_CACHE_DIR ?? '.data/repos', id),
    maxObjectBytes: d.config.REPO_MAX_FILE_BYTES ?? 104_857_600,
    index: new RepoObjectRepository(d.db, id),
    mirrors: mirrorsFor(d, s.mirrors),
    logger: d.logger,
    uploadUrl: '/api/repo/upload',
    signUpload: (c) => d.tokens.sign({ ...c, pathname: c.pathname }),
  })
}

/** The built-in repo instance from REPO_* variables, or null when REPO_REMOTE_URL is unset. */
export function builtinRepoDriver(d: FactoryDeps): RepoDriver | null {
  const c = d.config
  if (!c.REPO_REMOTE_URL) return null
  const settings = parseSettings(ZRepoSettings, {
    remoteUrl: c.REPO_REMOTE_URL,
    branch: c.REPO_BRANCH ?? 'main',
    username: c.REPO_USERNAME ?? 'x-access-token',
    ...(c.REPO_TOKEN ? { token: c.REPO_TOKEN } : {}),
    ...(c.REPO_OWNER ? { owner: c.REPO_OWNER } : {}),
    ...(c.REPO_NAME ? { repo: c.REPO_NAME } : {}),
  })
  return repoDriver(d, 'repo', settings)
}

/**
 * Builds the driver of an admin-defined instance from its stored settings. A blob instance lives
 * in its own dot-folder under BLOB_DIR (`.instances/<id>`), which the default blob instance's
 * listing skips.
 */
export function driverFactory(d: FactoryDeps) {
  return (kind: StoreKind, id: string, settings: Record<string, unknown>): StorageDriver => {
    switch (kind) {
      case 'blob':
        parseSettings(ZBlobSettings, settings)
        return new BlobDriver({
          dir: path.join(d.config.BLOB_DIR, '.instances', id),
          instance: id,
          uploadUrl: '/api/blob/upload',
          signUpload: (c) => d.tokens.sign({ ...c, pathname: c.pathname }),
        })
      case 'bucket': {
        const s = parseSettings(ZBucketSettings, settings)
        if (!s.accessKey || !s.secretKey) throw new Error('settings: accessKey and secretKey are required')
        return new BucketDriver({ ...s, accessKey: s.accessKey, secretKey: s.secretKey, instance: id })
      }
      case 'repo':
        return repoDriver(d, id, parseSettings(ZRepoSettings, settings))
    }
  }
}

/** The config of the built-in instances: BLOB_DIR, the S3_* variables, the REPO_* ones. */
export type BuiltinStorageConfig = FactoryConfig &
  Pick<
    TConfig,
    | 'S3_ENDPOINT'
    | 'S3_ACCESS_KEY'
    | 'S3_SECRET_KEY'
    | 'S3_BUCKET'
    | 'S3_REGION'
    | 'S3_PATH_STYLE'
    | 'S3_POST_POLICY'
  >

/** The storage instances from config: blob always, bucket when S3 is configured, repo with REPO_REMOTE_URL. */
export function buildStorage(
  config: BuiltinStorageConfig,
  tokens: UploadTokens,
  deps?: Omit<FactoryDeps, 'config' | 'tokens'>,
): StorageRegistry {
  const registry = new StorageRegistry()
  registry.add(
    new BlobDriver({
      dir: config.BLOB_DIR,
      uploadUrl: '/api/blob/upload',
      signUpload: (c) => tokens.sign({ ...c, pathname: c.pathname }),
    }),
  )
  if (config.S3_ENDPOINT && config.S3_ACCESS_KEY && config.S3_SECRET_KEY && config.S3_BUCKET) {
    registry.add(
      new BucketDriver({
        endpoint: config.S3_ENDPOINT,
        accessKey: config.S3_ACCESS_KEY,
        secretKey: config.S3_SECRET_KEY,
        bucket: config.S3_BUCKET,
        region: config.S3_REGION,
        pathStyle: config.S3_PATH_STYLE,
        postPolicy: config.S3_POST_POLICY,
      }),
    )
  }
  const repo = deps ? builtinRepoDriver({ ...deps, config, tokens }) : null
  if (repo) registry.add(repo)
  return registry
}
