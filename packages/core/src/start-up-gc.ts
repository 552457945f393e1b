import { performance } from 'node:perf_hooks'
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8'
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
 * no other code sees a global `gc`. `scavengeWhenIdle` below runs the same collection later.
 */
export function collectStartUpGarbage(): void {
  scavenge()
}

type Collect = (options: { type: 'minor' }) => void
let collect: Collect | null | undefined

/** One scavenge, through V8's `gc`, taken once and kept here (no global `gc` is left). */
function scavenge(): void {
  if (collect === undefined) {
    setFlagsFromString('--expose-gc')
    try {
      const gc: unknown = runInNewContext('gc')
      collect = typeof gc === 'function' ? (gc as Collect) : null
    } finally {
      setFlagsFromString('--no-expose-gc')
    }
  }
  collect?.({ type: 'minor' })
}

/** Above this, the young generation has grown past V8's initial size (1 MB semi-spaces). */
const GROWN_YOUNG_BYTES = 4 * 1024 * 1024
/** The event loop busy less than this share of a period counts as idle. */
const IDLE_LOOP_SHARE = 0.05

/**
 * Every `everyMs` (5 s, from `runService` once it listens): when the event loop was idle over
 * the period and the young generation has grown, one scavenge, so that V8 shrinks it again.
 * Returns the function that stops it (the timer never keeps the process alive).
 *
 * V8 grows the young generation under allocation (start-up, a burst of requests) up to two
 * 16 MB semi-spaces and shrinks it only in a collection that finds the allocation rate low: an
 * idle process makes no collection, so it kept the grown space for as long as it idled. Node
 * 24's V8 runs full collections of its own then (its memory reducer) and shrinks it there; Node
 * 20's did not. Measured with bench/memory on Node 20.20 (2026-11-25), dns-manager 10 s after
 * ready: new space 32 MB committed with 0.1 MB in use, RSS 109-110 MB; one scavenge 5 s after
 * ready left 1 MB and RSS 94. V8's own test for a low rate looks back 5 s, hence the period.
 * (`collectYoung` is for tests.)
 */
export function scavengeWhenIdle(everyMs = 5000, collectYoung: () => void = scavenge): () => void {
  let last = performance.eventLoopUtilization()
  const timer = setInterval(() => {
    const now = performance.eventLoopUtilization()
    const busy = performance.eventLoopUtilization(now, last).utilization
    last = now
    const young = getHeapSpaceStatistics().find((space) => space.space_name === 'new_space')
    if (busy < IDLE_LOOP_SHARE && young !== undefined && young.space_size > GROWN_YOUNG_BYTES) collectYoung()
  }, everyMs)
  timer.unref()
  return () => clearInterval(timer)
}
