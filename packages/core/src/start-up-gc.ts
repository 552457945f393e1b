import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'

/**
 * One young-generation collection (a scavenge) between start-up and serving, called by
 * `runService` once the app is built and before it listens.
 *
 * A service's start allocates a lot that dies at once (module initialisation, the migration
 * check, building the app), and an idle process allocates too little to reach the next scavenge:
 * that garbage sat in the young generation for as long as the service idled. Measured with
 * bench/memory on Node 24.21 (2026-11-25), RSS 10 s after ready: dns-manager 114 → 92 MB,
 * pickup-share 103 → 84, key-info 90 → 76, design-archive 84 → 70. It takes a few milliseconds,
 * before the first request.
 *
 * Not a full collection, which this was until 2026-11-25: a forced mark-compact at that point
 * frees the hidden classes that only short-lived objects had (node's tick objects, its stream
 * and request objects), and V8's caches for defining properties in literals then miss on the
 * new classes and go megamorphic for good. From then on every request paid for it in the
 * runtime: design-archive's 304 cost 14 µs of CPU instead of 11.3 (perf:
 * Runtime_DefineKeyedOwnPropertyInLiteral under process.nextTick), and pickup-share's downloads
 * ran at 0.41-0.46 of nginx's speed instead of 1.0-1.1. A scavenge moves objects but frees no
 * class. (The tick objects' class is now kept for good, `./tick-class.ts`, since Node 24's V8
 * runs full collections of its own once a process idles.)
 *
 * `gc` is V8's own function, exposed for the one context created here and taken back at once:
 * no other code sees a global `gc`.
 */
export function collectStartUpGarbage(): void {
  setFlagsFromString('--expose-gc')
  let gc: unknown
  try {
    gc = runInNewContext('gc')
  } finally {
    setFlagsFromString('--no-expose-gc')
  }
  if (typeof gc === 'function') (gc as (options: { type: 'minor' }) => void)({ type: 'minor' })
}
