import type { KeyValueStore } from '@quartet/core/kv'

export interface MirrorTarget {
  owner: string
  repo: string
  sha: string
  /** Path inside the repository ("/"-separated). */
  path: string
}

export interface MirrorRanking {
  /** Indexes of the healthy templates, fastest first. */
  order: number[]
  /** Indexes of the templates that failed every probe round. */
  failed: number[]
  /** Best probe time of each healthy template (ms). */
  latencyMs: Record<string, number>
}

/** A mirror URL template as REPO_MIRRORS and repo instances take it. */
export const isMirrorTemplate = (t: string) =>
  /^https?:\/\/[^/{}]+\//.test(t) && t.includes('{sha}') && t.includes('{path}')
export const MIRROR_TEMPLATE_RULE =
  'every template must be an http(s) URL with a fixed host and contain {sha} and {path}'

export interface MirrorSelectorOptions {
  /** Operator-configured templates with {owner} {repo} {sha} {path}. */
  templates: string[]
  kv: KeyValueStore
  /**
   * Prefix of the rankings' kv keys (default `mirror-rank:`). A ranking is positions in this
   * list, so selectors of other lists (repo instances with mirrors of their own) use their own.
   */
  keyPrefix?: string
  ttlMs: number
  /** Per probe request (default 2000 ms). */
  timeoutMs?: number
  /** Probe rounds; each mirror keeps its best time (default 3). */
  rounds?: number
}

/**
 * Picks the lowest-latency mirror of a git repository. Mirrors are operator-configured URL
 * templates (raw.githubusercontent.com, jsDelivr's /gh/ paths, …): URLs are only ever built from
 * them, with every value URL-encoded, so no client can make the server contact another host.
 * The ranking (3 rounds of small HEAD probes, 2 s timeout each, the minimum kept) is cached in kv
 * with a TTL, so replicas share it and the probes run once per TTL. While kv is unavailable each
 * process keeps its own ranking for the same TTL, so downloads neither fail nor probe every time.
 */
export class MirrorSelector {
  readonly templates: string[]
  private readonly timeoutMs: number
  private readonly rounds: number
  private probing = new Map<string, Promise<MirrorRanking>>()
  /** Rankings of this process, used while kv cannot be read or written. */
  private readonly local = new Map<string, { ranking: MirrorRanking; until: number }>()

  constructor(private readonly options: MirrorSelectorOptions) {
    this.templates = options.templates
    this.timeoutMs = options.timeoutMs ?? 2000
    this.rounds = options.rounds ?? 3
  }

  /** The URL of a file on one mirror; the host is always the template's own. */
  url(index: number, t: MirrorTarget): string {
    const template = this.templates[index]
    if (template === undefined) throw new Error(`no mirror template ${index}`)
    const enc = encodeURIComponent
    const filled = template
      .replaceAll('{owner}', enc(t.owner))
      .replaceAll('{repo}', enc(t.repo))
      .replaceAll('{sha}', enc(t.sha))
      .replaceAll('{path}', t.path.split('/').map(enc).join('/'))
    const origin = new URL(template.replace(/\{[a-z]+\}/g, 'x')).origin
    if (new URL(filled).origin !== origin) throw new Error('mirror URL left the configured host')
    return filled
  }

  private key(scope: string): string {
    return `${this.options.keyPrefix ?? 'mirror-rank:'}${scope}`
  }

  /** The cached ranking of `scope` (one repository), probing with `sample` when none is cached. */
  async rank(scope: string, sample: MirrorTarget): Promise<MirrorRanking> {
    if (this.templates.length === 0) return { order: [], failed: [], latencyMs: {} }
    let cached: string | null = null
    try {
      cached = await this.options.kv.get(this.key(scope))
    } catch {
      // kv unavailable: this process's own ranking, if it is fresh.
      const mine = this.local.get(scope)
      if (mine && mine.until > Date.now()) return mine.ranking
    }
    if (cached) return JSON.parse(cached) as MirrorRanking
    // One probe at a time per scope in this process; concurrent downloads share it.
    let running = this.probing.get(scope)
    if (!running) {
      running = this.probe(sample)
        .then(async (ranking) => {
          this.local.set(scope, { ranking, until: Date.now() + this.options.ttlMs })
          await this.options.kv
            .set(this.key(scope), JSON.stringify(ranking), this.options.ttlMs)
            .catch(() => {})
          return ranking
        })
        .finally(() => this.probing.delete(scope))
      this.probing.set(scope, running)
    }
    return running
  }

  /** Forgets the cached ranking (the next download probes again). */
  async invalidate(scope: string): Promise<void> {
    this.local.delete(scope)
    await this.options.kv.del(this.key(scope)).catch(() => {})
  }

  /** `rounds` rounds of HEAD requests to every mirror; a mirror is healthy when any round answered < 500. */
  async probe(sample: MirrorTarget): Promise<MirrorRanking> {
    const best = new Map<number, number>()
    for (let round = 0; round < this.rounds; round++) {
      await Promise.all(
        this.templates.map(async (_t, i) => {
          const ms = await this.probeOnce(i, sample)
          if (ms !== null && ms < (best.get(i) ?? Infinity)) best.set(i, ms)
        }),
      )
    }
    const order = [...best.entries()].sort((a, b) => a[1] - b[1]).map(([i]) => i)
    return {
      order,
      failed: this.templates.map((_t, i) => i).filter((i) => !best.has(i)),
      latencyMs: Object.fromEntries(
        [...best.entries()].map(([i, ms]) => [String(i), Math.round(ms * 10) / 10]),
      ),
    }
  }

  private async probeOnce(index: number, sample: MirrorTarget): Promise<number | null> {
    const started = performance.now()
    try {
      const res = await fetch(this.url(index, sample), {
        method: 'HEAD',
        redirect: 'manual',
        signal: AbortSignal.timeout(this.timeoutMs),
      })
      await res.body?.cancel()
      return res.status < 500 ? performance.now() - started : null
    } catch {
      return null
    }
  }
}
