import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'

/**
 * One full garbage collection between start-up and serving, called by `runService` once the app
 * is built and before it listens.
 *
 * A service's start allocates a lot that dies at once (module initialisation, the migration
 * check, building the app) and only scavenges run during it, so V8 grows the young generation
 * and promotes some of that garbage into the old one. Nothing frees either while the service
 * idles: V8 gives memory back through its memory reducer, which it starts only after a full
 * collection, and an idle process allocates too little to reach one. Measured with bench/memory
 * (BENCHMARKS.md), RSS 10 s after ready on Node 24: dns-manager 120 → 99-101 MB, pickup-share
 * 108 → 87-89; and 10 s after the load, with the memory reducer running from then on,
 * dns-manager 183-188 → 122-126. The collection takes 20-35 ms, before the first request.
 *
 * `gc` is V8's own function, exposed for the one context created here and taken back at once:
 * no other code sees a global `gc`.
 *
 * The collection runs with one tick in node's queue. `process.nextTick` builds each tick as an
 * object literal with computed keys, and V8 defines those keys through a cache of the object's
 * hidden class. A full collection that finds no tick alive frees that class; the next tick gets a
 * new one, the cache no longer matches, and V8 gives up caching there for good: from then on
 * every tick defines its keys in the runtime. Measured on design-archive (a 304 of
 * manifest.json, 50 connections, both Nodes; `perf` showed
 * Runtime_DefineKeyedOwnPropertyInLiteral under nextTick), that cost 2-2.5 µs of CPU a request,
 * 11.3 → 14 µs, in every service. The queued tick keeps the class alive through the collection.
 */
export function collectStartUpGarbage(): void {
  setFlagsFromString('--expose-gc')
  let gc: unknown
  try {
    gc = runInNewContext('gc')
  } finally {
    setFlagsFromString('--no-expose-gc')
  }
  if (typeof gc !== 'function') return
  process.nextTick(keepTickClass)
  gc()
}

const keepTickClass = (): void => {}
