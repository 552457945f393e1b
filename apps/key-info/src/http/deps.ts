import type { RateLimiter } from '@quartet/core/rate-limit'
import type { KeyDeps } from '../domain/keys.ts'
import type { UsageDeps } from '../domain/usage.ts'

/** What the route files need: the domain's dependencies and the per-key limiter. */
export interface RouteDeps {
  keys: KeyDeps
  usage: UsageDeps
  limiter: RateLimiter
}
