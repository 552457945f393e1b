import { randomBytes } from 'node:crypto'
import fs from 'node:fs/promises'
import path from 'node:path'
import { ApiError } from '@quartet/core/errors'
import type { Logger } from '@quartet/core/log'
import { GitError, type GitRunner } from './git.ts'
import { isOutOfSpace, outOfSpace } from './out-of-space.ts'

interface PendingChange {
  path: string
  /** null: remove the path. */
  blob: string | null
  resolve: (commit: string) => void
  reject: (err: unknown) => void
}

const NON_FAST_FORWARD = /non-fast-forward|fetch first|\[rejected\]|failed to update ref|cannot lock ref/i
const MISSING_BRANCH = /couldn't find remote ref|could not find remote ref/i

export interface RepoCommitsOptions {
  instance: string
  gitDir: string
  git: GitRunner
  /** Smart-HTTP remote (https://github.com/acme/drop.git); never with credentials in it. */
  remoteUrl: string
  branch: string
  logger: Logger
  /** Pushes retried after a non-fast-forward rejection (another writer got there first). */
  maxPushAttempts?: number | undefined
}

/**
 * The repo store's writes: changes waiting while a push runs are batched into the next commit,
 * and a push refused as non-fast-forward (another replica pushed first) is rebuilt on the new tip
 * and retried.
 */
export class RepoCommits {
  private pending: PendingChange[] = []
  private running: Promise<void> | null = null
  private readonly indexId = `${process.pid}-${randomBytes(4).toString('hex')}`
  private readonly gitDir: string
  private readonly git: GitRunner
  private readonly instance: string

  constructor(private readonly options: RepoCommitsOptions) {
    this.gitDir = options.gitDir
    this.git = options.git
    this.instance = options.instance
  }

  /** Queues one change; resolves with the SHA of the commit that carries it once pushed. */
  commit(change: { path: string; blob: string | null }): Promise<string> {
    return new Promise((resolve, reject) => {
      this.pending.push({ ...change, resolve, reject })
      this.kick()
    })
  }

  private kick(): void {
    if (this.running) return
    this.running = this.drain().finally(() => {
      this.running = null
      if (this.pending.length) this.kick()
    })
  }

  private async drain(): Promise<void> {
    while (this.pending.length) {
      const batch = this.pending.splice(0)
      try {
        const sha = await this.commitBatch(batch)
        for (const c of batch) c.resolve(sha)
      } catch (err) {
        for (const c of batch) c.reject(err)
      }
    }
  }

  /** Fetches the tip, builds one commit with every change of the batch on it, pushes; retries on a lost race. */
  private async commitBatch(batch: PendingChange[]): Promise<string> {
    const attempts = this.options.maxPushAttempts ?? 8
    // One index file per store object: batches of this object never overlap (one drain at a time).
    const indexFile = path.join(this.gitDir, `index-${this.indexId}`)
    const env = { GIT_INDEX_FILE: indexFile }
    for (let attempt = 1; ; attempt++) {
      const parent = await this.fetchTip()
      await fs.rm(indexFile, { force: true })
      if (parent) await this.git.run(['read-tree', parent], { env })
      else await this.git.run(['read-tree', '--empty'], { env })
      const lines = batch.map((c) =>
        c.blob ? `100644 ${c.blob}\t${c.path}\n` : `0 ${'0'.repeat(40)}\t${c.path}\n`,
      )
      await this.git.run(['update-index', '--index-info'], { env, input: lines.join('') })
      const tree = (await this.git.run(['write-tree'], { env })).trim()
      const adds = batch.filter((c) => c.blob).length
      const message = `pickup-share: ${adds} added, ${batch.length - adds} removed`
      const commit = (
        await this.git.run(['commit-tree', tree, ...(parent ? ['-p', parent] : []), '-m', message])
      ).trim()
      try {
        await this.git.run([
          'push',
          '--quiet',
          '--no-verify',
          this.options.remoteUrl,
          `${commit}:refs/heads/${this.options.branch}`,
        ])
        await fs.rm(indexFile, { force: true })
        return commit
      } catch (err) {
        const lost = err instanceof GitError && NON_FAST_FORWARD.test(err.stderr)
        if (!lost || attempt >= attempts) throw this.storageError('push', err)
        this.options.logger.info(
          { store: this.instance, attempt },
          'repo push lost a race; retrying on the new tip',
        )
        await new Promise((r) => setTimeout(r, Math.random() * 50 * attempt))
      }
    }
  }

  /** The branch tip on the remote (fetched into the cache), or null for an empty repository. */
  async fetchTip(): Promise<string | null> {
    const ref = `refs/remotes/origin/${this.options.branch}`
    try {
      await this.git.run([
        'fetch',
        '--quiet',
        '--no-tags',
        this.options.remoteUrl,
        `+refs/heads/${this.options.branch}:${ref}`,
      ])
    } catch (err) {
      if (err instanceof GitError && MISSING_BRANCH.test(err.stderr)) return null
      throw this.storageError('fetch', err)
    }
    return (await this.git.run(['rev-parse', '--verify', ref])).trim()
  }

  private storageError(step: string, err: unknown): ApiError {
    this.options.logger.warn(
      { store: this.instance, step, err: err instanceof Error ? err.message : String(err) },
      'repo store: git failed',
    )
    // The remote (or the local cache) is out of space or over its quota: 507, not a git failure.
    if (isOutOfSpace(err)) return outOfSpace('repo')
    return new ApiError('storage_failed', `the repository store could not ${step}`)
  }

  /**
   * Removes index files of batches whose process is gone (this host's pid no longer runs), and
   * any older than `staleBefore`. (Objects of failed uploads are unreachable; git gc prunes them.)
   */
  async removePartials(staleBefore: Date): Promise<{ files: number; bytes: number }> {
    const removed = { files: 0, bytes: 0 }
    let names: string[]
    try {
      names = await fs.readdir(this.gitDir)
    } catch {
      return removed
    }
    for (const name of names) {
      const m = /^index-(\d+)-[0-9a-f]+$/.exec(name)
      if (!m || Number(m[1]) === process.pid) continue
      const file = path.join(this.gitDir, name)
      const st = await fs.stat(file).catch(() => null)
      if (!st) continue
      if (processRuns(Number(m[1])) && st.mtime >= staleBefore) continue
      await fs.rm(file, { force: true })
      removed.files++
      removed.bytes += st.size
    }
    return removed
  }
}

function processRuns(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}
