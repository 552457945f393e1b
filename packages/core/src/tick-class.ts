import { executionAsyncResource } from 'node:async_hooks'

/**
 * Keeps the hidden class of node's tick objects alive for the life of the process: one tick
 * object, the first one `runService` queues, is held here and never freed.
 *
 * `process.nextTick` builds each tick as an object literal with two computed (symbol) keys, and
 * V8 defines those keys through an inline cache keyed by the object's hidden class. Ticks live
 * for microseconds, so when the process idles none is alive, and a full collection then frees
 * their class. The next tick gets a new one, the cache misses on a class it has seen before, and
 * V8 stops caching there for good: from then on every `nextTick` defines its keys in V8's
 * runtime (perf: `Runtime_DefineKeyedOwnPropertyInLiteral` under `nextTick`), and node's HTTP
 * server queues several ticks a request. Node 24's V8 runs such full collections by itself a few
 * seconds after a busy start or a burst of requests (its memory reducer); a forced one at
 * start-up did the same on Node 20 (start-up-gc.ts). Measured on design-archive, Node 24.21, a
 * 304 of manifest.json after 12 s idle: the runtime call took 1.2% of the process's CPU, and
 * nothing once the class was kept (bench/design-archive: BENCHMARKS.md, "Issue 17").
 *
 * Inside a tick's callback `executionAsyncResource()` is the tick object itself (node passes it
 * as the resource of the callback it runs), so no async hook is needed to reach it.
 */
let kept: object | undefined

export function keepTickObjectClass(): void {
  if (kept !== undefined) return
  process.nextTick(() => {
    kept ??= executionAsyncResource()
  })
}

/** The tick object held, once the first tick after `keepTickObjectClass()` ran (for tests). */
export function keptTickObject(): object | undefined {
  return kept
}
