import { operationsOver } from '@quartet/core/operation'
import type { RateLimiter } from '@quartet/core/rate-limit'
import type { KeyDeps } from '../domain/keys.ts'
import type { KeyReadAhead } from '../domain/ports.ts'
import type { UsageDeps } from '../domain/usage.ts'

/** What the route files need: the domain's dependencies, the per-key limiter, the kv read-ahead. */
export interface RouteDeps {
  keys: KeyDeps
  usage: UsageDeps
  limiter: RateLimiter
  readAhead: KeyReadAhead
}

/** key-info's operations, each over the route dependencies. */
export const { define } = operationsOver<RouteDeps>()
