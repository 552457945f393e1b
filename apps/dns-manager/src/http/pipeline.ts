import { parseKeyAndSecret } from '@quartet/core/auth'
import { ApiError, toApiError } from '@quartet/core/errors'
import { type RateLimitDecision, type RateLimiter, rateLimitError } from '@quartet/core/rate-limit'
import { parseInput } from '@quartet/core/validate'
import { ACME_ONLY_MESSAGE } from '../domain/acme-scope.ts'
import type { UseCases, Principal } from '../domain/use-cases.ts'
import type { AuditStore, KvRead } from '../domain/ports.ts'
import { basicCredentials } from './basic-auth.ts'
import { acmeCredential, type DnsOperation as Operation } from './define.ts'

/**
 * The one request pipeline every call style runs: (1) credentials (X-API-Key/X-API-Secret,
 * Bearer KEY:SECRET, or HTTP Basic KEY:SECRET as ACME clients send them), (2) the API switch, (3) the IP
 * allow list — once per HTTP request — then, per operation call, (4) the rate limit and (5) input
 * validation, the handler, and the audit entry of a write.
 */
export function createPipeline(deps: { useCases: UseCases; limiter: RateLimiter; repo: AuditStore }) {
  return {
    authenticate(
      headers: Record<string, string | string[] | undefined>,
      ip: string | undefined,
    ): Promise<Principal> {
      return deps.useCases.authenticate(credentialsOf(headers), ip)
    },

    /**
     * `authenticate`, with the rate-limit points of the calls to follow (`pointsOf` the
     * credential; 0: none) spent in authentication's own kv command: one round trip where
     * `authenticate` then `spend` make two. Only for a credential this process holds, presented
     * with its secret, that passed every check when last read (accounts.ts, `ride`); otherwise
     * `prepaid` is null and the calls spend as usual. `prepaid` hands the decisions out.
     */
    async admit(
      headers: Record<string, string | string[] | undefined>,
      ip: string | undefined,
      pointsOf: (credentialId: string) => number,
    ): Promise<{ principal: Principal; prepaid: RateLimitDecision[] | null }> {
      let taken: { credentialId: string; decisions: RateLimitDecision[] } | undefined
      const ride = (credentialId: string): KvRead | undefined => {
        const points = pointsOf(credentialId)
        if (points < 1) return undefined
        return (keys) =>
          deps.limiter
            .consumeEachAndRead(`cred:${credentialId}`, points, keys)
            .then(({ decisions, values }) => {
              taken = { credentialId, decisions }
              return values
            })
      }
      const principal = await deps.useCases.authenticate(credentialsOf(headers), ip, undefined, ride)
      const prepaid = taken?.credentialId === principal.credentialId ? taken.decisions : null
      return { principal, prepaid }
    },

    /** One rate-limit point per operation call (a JSON-RPC batch entry, a GraphQL root field). */
    async spend(principal: Principal): Promise<RateLimitDecision> {
      return allowed(await deps.limiter.consume(`cred:${principal.credentialId}`))
    },

    /**
     * The points of `count` calls at once, in one round trip (a memoised answer's calls): each
     * call's decision, as `count` spends in a row would make them. Never throws for a refusal.
     */
    spendEach(principal: Principal, count: number): Promise<RateLimitDecision[]> {
      return deps.limiter.consumeEach(`cred:${principal.credentialId}`, count)
    },

    /**
     * `spend` for calls whose points spendEach took already: hands out those decisions in
     * order (a refused one throws, as spend does), then spends as usual.
     */
    prepaid(decisions: readonly RateLimitDecision[]): (principal: Principal) => Promise<RateLimitDecision> {
      const queue = [...decisions]
      return async (principal) => {
        const decision = queue.shift()
        return decision
          ? allowed(decision)
          : allowed(await deps.limiter.consume(`cred:${principal.credentialId}`))
      }
    },

    async run(op: Operation, principal: Principal, rawInput: unknown): Promise<unknown> {
      let input: unknown
      try {
        if (principal.scope === 'acme' && op.auth !== acmeCredential)
          throw new ApiError('credential_scope_forbidden', ACME_ONLY_MESSAGE)
        input = parseOperationInput(op, rawInput)
        const output = await op.call({ useCases: deps.useCases, principal }, input as never)
        if (op.write) await audit(op, principal, input ?? rawInput, output, 'ok')
        return output
      } catch (err) {
        if (op.write) await audit(op, principal, input ?? rawInput, undefined, toApiError(err).code)
        throw err
      }
    },
  }

  async function audit(op: Operation, p: Principal, input: unknown, output: unknown, outcome: string) {
    let target: string | null
    try {
      target = op.target ? op.target(input as never, output) : null
    } catch {
      target = null
    }
    await deps.repo
      .audit({
        accountId: p.accountId,
        credentialId: p.via === 'web' ? null : p.credentialId,
        via: p.via ?? 'api',
        ip: p.ip ?? null,
        operation: op.name,
        target,
        outcome,
      })
      .catch(() => {})
  }
}

export type Pipeline = ReturnType<typeof createPipeline>

/** For `admit`: one point, the one call of a REST read. */
export const ONE_POINT = (): number => 1

const credentialsOf = (headers: Record<string, string | string[] | undefined>) =>
  parseKeyAndSecret(headers) ?? basicCredentials(headers.authorization)

function allowed(decision: RateLimitDecision): RateLimitDecision {
  if (!decision.allowed) throw rateLimitError(decision, 'rate limit exceeded; retry after details.reset_at')
  return decision
}

/**
 * zod validation at the edge. Like the domain's own checks, a refusal names the first offending
 * field in `details.field` (`ttl`, `subdomain_id`), next to every issue in `details.issues`.
 */
function parseOperationInput(op: Operation, raw: unknown): unknown {
  try {
    return parseInput(op.args, raw ?? {}, 'input')
  } catch (err) {
    const issues = (err as ApiError).details?.issues as Array<{ field: string }> | undefined
    if (!(err instanceof ApiError) || !issues?.length) throw err
    const field = issues[0]!.field.replace(/^input\.?/, '') || 'input'
    throw new ApiError('bad_request', err.message.replace(/^input\./, ''), { field, issues })
  }
}
