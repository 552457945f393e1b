import { isKeptBody } from '@quartet/core/http'
import type { RateLimitDecision } from '@quartet/core/rate-limit'
import client from 'prom-client'
import type { ViewCache } from '../domain/ports.ts'
import type { Principal } from '../domain/use-cases.ts'
import type { Pipeline } from './pipeline.ts'

/** A kept answer, and how many rate-limit points the request it answers spends. */
export interface Memoised<T> {
  answer: T
  points: number
}

interface Memo<T> extends Memoised<T> {
  request: string
  credentialId: string
  token: string
  /** When it last moved to the recently used end (at most once a second, as the views cache does). */
  movedAt: number
  /** The views cache's values the answer was made of (one per counted call). */
  views: readonly unknown[]
  size: number
}

export interface AnswerMemo<T> {
  /**
   * The answer kept for this credential's request, if every view it was made of is still the
   * one the views cache would hand this request (its token, the values themselves).
   */
  get(principal: Principal, request: string): Memoised<T> | undefined
  /**
   * The points of the answer kept for this credential's request, whether or not it is still
   * good (0: none kept): what to spend ahead, before authentication says which views are current.
   */
  pointsOf(credentialId: string, request: string): number
  /**
   * Keeps a request's answer when it was made of views cache values alone, one per counted call
   * (`views`): nothing is kept (and `make` is not called) when one of them is not held under the
   * principal's token. `make` gives the answer and its size in bytes.
   */
  keep(
    principal: Principal,
    request: string,
    views: readonly unknown[],
    make: () => { answer: T; size: number },
  ): T | undefined
}

/**
 * Whole answers to read-only requests that are made of an account's cached views alone (a
 * JSON-RPC batch of reads, a GraphQL query), per process: the same request again, from the same
 * credential, gets the same bytes without running its calls, as long as each view it was made of
 * is still the one the views cache holds (store/view-cache.ts, `holds`: the same object under the
 * request's token, neither too old nor past its own time). Every change the views show replaces
 * that token, so the answer is dropped exactly when one of its views would be read again.
 * Authentication still runs on every request (the credential, the API switch, the allow list),
 * and so does the rate limit: the caller spends the answer's points before using it.
 *
 * Keyed by credential and the request's text (the parsed body, serialised); at most `maxBytes`
 * of answers and keys, the least recently used first out. Without a views cache (the memory kv),
 * nothing is held and nothing is kept.
 */
export function answerMemo<T>(
  views: ViewCache,
  options: { maxBytes?: number; onHit?: () => void; now?: () => number } = {},
): AnswerMemo<T> {
  const maxBytes = options.maxBytes ?? 4 * 1024 * 1024
  const clock = options.now ?? (() => performance.now())
  // By request, then credential: the request's text is the same string object each time its
  // body is kept (requestKey), so neither lookup reads the text again, where one key of both
  // would be built and hashed anew for every request.
  const memos = new Map<string, Map<string, Memo<T>>>()
  /** Least recently used first. */
  const order = new Set<Memo<T>>()
  let bytes = 0
  const find = (credentialId: string, request: string) => memos.get(request)?.get(credentialId)
  const drop = (memo: Memo<T>) => {
    order.delete(memo)
    const ofRequest = memos.get(memo.request)
    ofRequest?.delete(memo.credentialId)
    if (ofRequest?.size === 0) memos.delete(memo.request)
    bytes -= memo.size
  }

  return {
    get(principal, request) {
      const token = principal.viewToken ?? null
      if (token === null) return undefined
      const memo = find(principal.credentialId, request)
      if (!memo) return undefined
      if (memo.token !== token || !views.holds(memo.views, token)) {
        drop(memo)
        return undefined
      }
      // Most recently used last, so the first is the one to let go (moved at most once a second).
      const now = clock()
      if (now - memo.movedAt >= 1000) {
        memo.movedAt = now
        order.delete(memo)
        order.add(memo)
      }
      options.onHit?.()
      return memo
    },

    pointsOf: (credentialId, request) => find(credentialId, request)?.points ?? 0,

    keep(principal, request, made, make) {
      const token = principal.viewToken ?? null
      if (token === null || made.length === 0 || !views.holds(made, token)) return undefined
      const { answer, size } = make()
      const { credentialId } = principal
      const total = size + 2 * (credentialId.length + 1 + request.length) + 64 * made.length
      if (total > maxBytes / 16) return answer
      const current = find(credentialId, request)
      if (current) drop(current)
      const memo: Memo<T> = {
        answer,
        points: made.length,
        request,
        credentialId,
        token,
        views: made,
        size: total,
        movedAt: clock(),
      }
      let ofRequest = memos.get(request)
      if (!ofRequest) memos.set(request, (ofRequest = new Map()))
      ofRequest.set(credentialId, memo)
      order.add(memo)
      bytes += total
      for (const oldest of order) {
        if (bytes <= maxBytes) break
        drop(oldest)
      }
      return answer
    },
  }
}

/**
 * A request's memo key: its body as JSON (up to 16 KB), all its answer depends on but the
 * credential. A body core's hot routes keep (isKeptBody: the same frozen value for every request
 * with the same text) keeps its key too, so a repeated request serialises nothing.
 */
export function requestKey(body: object): string | undefined {
  const known = keys.get(body)
  if (known !== undefined) return known === NO_KEY ? undefined : known
  const text = JSON.stringify(body)
  const key = text.length <= 16 * 1024 ? text : undefined
  if (isKeptBody(body)) keys.set(body, key ?? NO_KEY)
  return key
}
const keys = new WeakMap<object, string | typeof NO_KEY>()
const NO_KEY = Symbol('no key')

/**
 * The answer kept for this request, once its points are spent (`answer`); otherwise the spend its
 * calls are to use: the pipeline's, or, when points were spent already, those decisions first.
 * `prepaid`: the points authentication spent for it (pipeline.ts `admit`, as many as `pointsOf`
 * said), or null to spend them here. When one of them is refused, the calls run as usual with the
 * decisions taken (each call then refused or served as it would be without the memo).
 */
export async function keptAnswer<T>(
  memo: AnswerMemo<T>,
  pipeline: Pipeline,
  principal: Principal,
  key: string,
  prepaid: RateLimitDecision[] | null = null,
): Promise<{ answer: T } | { spend: Pipeline['spend'] }> {
  const kept = memo.get(principal, key)
  if (!kept) return { spend: prepaid ? pipeline.prepaid(prepaid) : pipeline.spend }
  const decisions = prepaid ?? (await pipeline.spendEach(principal, kept.points))
  return decisions.length === kept.points && decisions.every((d) => d.allowed)
    ? { answer: kept.answer }
    : { spend: pipeline.prepaid(decisions) }
}

/**
 * The memos of the two call styles that have them, counted for the scraper. `RpcAnswer` is
 * rpc-messages.ts's answer type, named by the composition root: rpc.ts uses this file, not the reverse.
 */
export function answerMemos<RpcAnswer>(views: ViewCache | undefined) {
  const hits = new client.Counter({
    name: 'dns_manager_memoised_answers_total',
    help: 'Read-only requests that found their whole answer kept from the same request before (answer-memo.ts), by call style; one whose rate-limit points were refused then runs its calls as usual',
    labelNames: ['style'] as const,
    registers: [],
  })
  const memo = <T>(style: 'rpc' | 'graphql') => {
    hits.labels(style).inc(0)
    return views && answerMemo<T>(views, { onHit: () => hits.labels(style).inc() })
  }
  return {
    rpc: memo<RpcAnswer>('rpc'),
    graphql: memo<Buffer>('graphql'),
    /** Adds the counter to the app's registry. */
    register(target: client.Registry) {
      target.registerMetric(hits)
    },
  }
}
