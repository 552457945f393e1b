import { existsSync } from 'node:fs'
import fs from 'node:fs/promises'
import path from 'node:path'
import { Readable } from 'node:stream'
import { ApiError } from '@quartet/core/errors'
import type { Logger } from '@quartet/core/log'
import type {
  ByteRange,
  IssueUploadInput,
  ListedObject,
  ObjectInfo,
  StorageDriver,
  UploadPermission,
} from '../domain/storage.ts'
import type { RepoObjectRecord } from '../store/repo-object-repository.ts'
import { GitError, type GitRunner, gitRunner } from './git.ts'
import { putLimit } from './limit.ts'
import { isOutOfSpace, outOfSpace } from './out-of-space.ts'
import type { MirrorSelector } from './mirrors.ts'
import { RepoCommits } from './repo-commits.ts'
import { type ServiceUpload, servicePutPermission } from './service-upload.ts'
import { BlobVerifier, sliceStream } from './repo-read.ts'

/** Where the store remembers which commit holds each file (a table in Postgres). */
export interface RepoIndex {
  record(o: Omit<RepoObjectRecord, 'createdAt'>): Promise<boolean>
  find(pathname: string): Promise<RepoObjectRecord | null>
  delete(pathname: string): Promise<void>
  list(): Promise<RepoObjectRecord[]>
}

export interface RepoDriverOptions extends ServiceUpload {
  instance?: string
  /** Smart-HTTP remote (https://github.com/acme/drop.git); never with credentials in it. */
  remoteUrl: string
  branch: string
  username: string
  token?: string | undefined
  /** {owner}/{repo} of the mirror templates. */
  owner: string
  repo: string
  /** Local bare clone (a cache). */
  cacheDir: string
  /** The host's per-file cap. */
  maxObjectBytes: number
  index: RepoIndex
  mirrors: MirrorSelector | null
  logger: Logger
  /** Pushes retried after a non-fast-forward rejection (another writer got there first). */
  maxPushAttempts?: number | undefined
}

/**
 * The git repository store ("repo"). Browsers upload to our own server (a git token in a browser
 * would leak); the body streams into `git hash-object -w --stdin` under the per-file cap, then
 * joins a commit. Changes waiting while a push runs are batched into the next commit, and a push
 * refused as non-fast-forward (another replica pushed first) is rebuilt on the new tip and
 * retried. Every file is addressed by the commit it landed in, so a mirror never serves a stale
 * branch. Downloads stream from the fastest healthy mirror, down the ranking, and finally from
 * the remote itself.
 */
export class RepoDriver implements StorageDriver {
  readonly kind = 'repo' as const
  readonly instance: string
  readonly maxObjectBytes: number
  readonly gitDir: string
  private readonly git: GitRunner
  private readonly commits: RepoCommits
  private ready: Promise<void> | null = null

  constructor(private readonly options: RepoDriverOptions) {
    this.instance = options.instance ?? 'repo'
    this.maxObjectBytes = options.maxObjectBytes
    this.gitDir = path.resolve(options.cacheDir)
    this.git = gitRunner({ gitDir: this.gitDir, username: options.username, token: options.token })
    this.commits = new RepoCommits({
      instance: this.instance,
      gitDir: this.gitDir,
      git: this.git,
      remoteUrl: options.remoteUrl,
      branch: options.branch,
      logger: options.logger,
      maxPushAttempts: options.maxPushAttempts,
    })
  }

  /** The local bare repository; recreated when the cache folder was removed. */
  private async ensureRepo(): Promise<void> {
    if (existsSync(path.join(this.gitDir, 'HEAD'))) return
    this.ready ??= (async () => {
      await fs.mkdir(this.gitDir, { recursive: true })
      await this.git.run(['init', '--bare', '--quiet', this.gitDir])
    })().finally(() => {
      this.ready = null
    })
    await this.ready
  }

  /**
   * Connection test: `git ls-remote` of the branch with the instance's token (no commit is made).
   * An empty answer is fine (the first upload creates the branch) and is said in the note.
   */
  async checkConnection(): Promise<{ note?: string; noteCode?: 'branch_missing' }> {
    await this.ensureRepo()
    let out: string
    try {
      out = await this.git.run([
        'ls-remote',
        '--heads',
        this.options.remoteUrl,
        `refs/heads/${this.options.branch}`,
      ])
    } catch (err) {
      const stderr = err instanceof GitError ? err.stderr : String(err)
      const [reason, words] = /authentication failed|could not read username|403|401/i.test(stderr)
        ? ['auth', 'the remote refused the token (authentication failed)']
        : /not found|does not appear to be a git repository|404/i.test(stderr)
          ? ['no_repo', 'no repository at this address']
          : /could not resolve host|connection refused|failed to connect|timed out/i.test(stderr)
            ? ['unreachable', 'the remote could not be reached']
            : ['other', 'git could not list the remote']
      const detail = stderr.trim().split('\n').pop()?.slice(0, 300)
      throw Object.assign(new Error(detail ? `${words}: ${detail}` : words), { reason })
    }
    return out.trim()
      ? {}
      : {
          note: `branch ${this.options.branch} does not exist yet; the first upload creates it`,
          noteCode: 'branch_missing',
        }
  }

  /** A driver built for a connection test leaves no cache folder behind. */
  async discard(): Promise<void> {
    await fs.rm(this.gitDir, { recursive: true, force: true })
  }

  private checkPath(pathname: string): void {
    const segments = pathname.split('/')
    const bad =
      pathname.length === 0 ||
      pathname.length > 1024 ||
      /[\0\\\n\r\t]/.test(pathname) ||
      segments.some((s) => s === '' || s === '.' || s === '..' || s.toLowerCase() === '.git')
    if (bad) throw new ApiError('file_not_found', 'no such object')
  }

  async issueUpload(input: IssueUploadInput): Promise<UploadPermission> {
    this.checkPath(input.pathname)
    const maxBytes =
      input.maxBytes === null ? this.maxObjectBytes : Math.min(input.maxBytes, this.maxObjectBytes)
    return servicePutPermission(this.options, { instance: this.instance, ...input, maxBytes })
  }

  async put(
    pathname: string,
    body: Readable,
    options: { size?: number | null; maxBytes: number | null; allowOverwrite: boolean },
  ): Promise<{ size: number }> {
    this.checkPath(pathname)
    if (await this.options.index.find(pathname))
      throw new ApiError('upload_exists', 'an object already exists at this pathname')
    await this.ensureRepo()
    const cap =
      options.maxBytes === null ? this.maxObjectBytes : Math.min(options.maxBytes, this.maxObjectBytes)
    // Exactly the declared size (else at most the cap), checked before anything is committed.
    const limit = putLimit({ size: options.size, maxBytes: cap })
    body.on('error', (err) => limit.destroy(err))
    let blob: string
    try {
      blob = (await this.git.run(['hash-object', '-w', '--stdin'], { input: body.pipe(limit) })).trim()
    } catch (err) {
      // The local cache's disk is full: 507, and nothing is committed.
      if (!(err instanceof ApiError) && isOutOfSpace(err)) throw outOfSpace('repo', err)
      throw err
    }
    const commit = await this.commits.commit({ path: pathname, blob })
    if (!(await this.options.index.record({ pathname, commitSha: commit, blobSha: blob, size: limit.bytes })))
      throw new ApiError('upload_exists', 'an object already exists at this pathname')
    return { size: limit.bytes }
  }

  /** Index files of commit batches whose process is gone or that are older than `staleBefore`. */
  removePartials(staleBefore: Date): Promise<{ files: number; bytes: number }> {
    return this.commits.removePartials(staleBefore)
  }

  async stat(pathname: string): Promise<ObjectInfo | null> {
    const rec = await this.options.index.find(pathname)
    return rec ? { size: rec.size, lastModified: rec.createdAt } : null
  }

  /**
   * A range is cut from the start of the blob: mirrors and git serve whole objects, and only a
   * read that runs to the end of the file can be checked against the blob SHA.
   */
  async openRead(pathname: string, range?: ByteRange): Promise<{ stream: Readable; size: number }> {
    const opened = await this.openWhole(pathname)
    return range ? { stream: sliceStream(opened.stream, range), size: opened.size } : opened
  }

  private async openWhole(pathname: string): Promise<{ stream: Readable; size: number }> {
    const rec = await this.options.index.find(pathname)
    if (!rec) throw new ApiError('file_not_found', 'the file is no longer in the store')
    const mirrors = this.options.mirrors
    if (mirrors && mirrors.templates.length > 0) {
      const target = {
        owner: this.options.owner,
        repo: this.options.repo,
        sha: rec.commitSha,
        path: pathname,
      }
      const scope = `${this.instance}:${this.options.owner}/${this.options.repo}`
      let order: number[] = []
      try {
        order = (await mirrors.rank(scope, target)).order
      } catch (err) {
        this.options.logger.warn(
          { store: this.instance, err: (err as Error).message },
          'mirror ranking failed',
        )
      }
      for (const i of order) {
        const opened = await this.fromMirror(mirrors.url(i, target), rec)
        if (opened) return opened
      }
    }
    return this.fromRemote(rec)
  }

  /** One mirror: 200 with the right length, else null (next one). The bytes are checked against the blob SHA. */
  private async fromMirror(
    url: string,
    rec: RepoObjectRecord,
  ): Promise<{ stream: Readable; size: number } | null> {
    try {
      // The timeout covers the answer's headers only; the body then streams for as long as it takes.
      const abort = new AbortController()
      const timer = setTimeout(() => abort.abort(), 10_000)
      const res = await fetch(url, { redirect: 'manual', signal: abort.signal }).finally(() =>
        clearTimeout(timer),
      )
      const length = res.headers.get('content-length')
      if (res.status !== 200 || !res.body || (length !== null && Number(length) !== rec.size)) {
        await res.body?.cancel().catch(() => {})
        this.options.logger.info(
          { store: this.instance, mirror: new URL(url).host, status: res.status },
          'mirror skipped',
        )
        return null
      }
      const source = Readable.fromWeb(res.body as Parameters<typeof Readable.fromWeb>[0])
      const verify = new BlobVerifier(rec.blobSha, rec.size)
      source.on('error', (err) => verify.destroy(err))
      return { stream: source.pipe(verify), size: rec.size }
    } catch (err) {
      this.options.logger.info(
        { store: this.instance, mirror: new URL(url).host, err: (err as Error).message },
        'mirror failed',
      )
      return null
    }
  }

  /** The last resort: the object from the remote (fetched by commit into the local cache). */
  private async fromRemote(rec: RepoObjectRecord): Promise<{ stream: Readable; size: number }> {
    await this.ensureRepo()
    const has = () =>
      this.git.run(['cat-file', '-e', rec.blobSha]).then(
        () => true,
        () => false,
      )
    if (!(await has())) {
      try {
        await this.git.run(['fetch', '--quiet', '--no-tags', this.options.remoteUrl, rec.commitSha])
      } catch {
        // Servers that refuse a want by SHA: the branch history holds the commit.
        await this.commits.fetchTip().catch(() => null)
      }
      if (!(await has()))
        throw new ApiError('storage_failed', 'the file could not be fetched from the repository')
    }
    const { stdout, done } = this.git.stream(['cat-file', 'blob', rec.blobSha])
    done.catch((err) => stdout.destroy(err))
    return { stream: stdout, size: rec.size }
  }

  /** Removes the file from the branch tip (git history keeps it; see README). */
  async delete(pathname: string): Promise<void> {
    const rec = await this.options.index.find(pathname)
    if (!rec) return
    await this.ensureRepo()
    await this.commits.commit({ path: pathname, blob: null })
    await this.options.index.delete(pathname)
  }

  async *list(): AsyncIterable<ListedObject> {
    for (const r of await this.options.index.list())
      yield { pathname: r.pathname, size: r.size, lastModified: r.createdAt }
  }
}
