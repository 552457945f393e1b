import { constants, PerformanceObserver } from 'node:perf_hooks'
import { getHeapSpaceStatistics } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { collectStartUpGarbage, scavengeWhenIdle } from '../src/start-up-gc.ts'

const youngSpace = () => getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')!
const youngBytes = () => youngSpace().space_used_size
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
/** Allocates ~`mb` MB that dies at once: V8 grows the young generation for it. */
function allocateGarbage(mb: number): void {
  let last: number[] = []
  for (let i = 0; i < mb * 160; i++) last = new Array(800).fill(i)
  expect(last).toHaveLength(800)
}
/** Keeps the event loop busy for `ms` (one synchronous stretch). */
function busyFor(ms: number): void {
  const until = performance.now() + ms
  while (performance.now() < until) allocateGarbage(1)
}

/** The one collection `runService` makes between start-up and serving. */
describe('collectStartUpGarbage', () => {
  it('empties the young generation with a scavenge, and runs no full collection', async () => {
    const collections: Array<{ kind: number; at: number }> = []
    const observer = new PerformanceObserver((list) => {
      for (const entry of list.getEntries())
        collections.push({
          kind: (entry as unknown as { detail: { kind: number } }).detail.kind,
          at: entry.startTime,
        })
    })
    observer.observe({ entryTypes: ['gc'] })
    let from = 0
    let to = 0
    try {
      // Start-up's garbage: about 1.6 MB that nothing keeps.
      let last: number[] = []
      for (let i = 0; i < 2000; i++) last = new Array(100).fill(i)
      expect(last).toHaveLength(100)
      const before = youngBytes()
      from = performance.now()
      collectStartUpGarbage()
      to = performance.now()
      // Only what is still reachable is left (a scavenge may also have run during the loop).
      expect(youngBytes()).toBeLessThan(before)
      await new Promise((resolve) => setTimeout(resolve, 50))
    } finally {
      observer.disconnect()
    }
    // A full collection would free hidden classes that only short-lived objects have, and V8's
    // property-definition caches would go megamorphic for good (see start-up-gc.ts). Only the
    // call's own collections count: the test runner's heap may start one of its own afterwards.
    const during = collections.filter((c) => c.at >= from && c.at <= to).map((c) => c.kind)
    expect(during).toEqual([constants.NODE_PERFORMANCE_GC_MINOR])
  })

  it('leaves no gc function behind, here or in a context made later', () => {
    collectStartUpGarbage()
    expect((globalThis as { gc?: unknown }).gc).toBeUndefined()
    expect(runInNewContext('typeof gc')).toBe('undefined')
  })
})

describe('scavengeWhenIdle', () => {
  // Whether V8 then shrinks the young generation is its own judgement of the allocation rate,
  // which a loaded CI worker may not pass in a few seconds: bench/memory measures that
  // (BENCHMARKS.md, "Issue 17, afternoon"). Here: when it collects, and when not.
  it('collects when the loop idled and the young generation had grown, not while the loop is busy', async () => {
    let calls = 0
    allocateGarbage(100)
    expect(youngSpace().space_size).toBeGreaterThan(4 * 1024 * 1024)
    const stop = scavengeWhenIdle(100, () => calls++)
    try {
      // Busy for most of each period: no collection.
      for (let i = 0; i < 4; i++) {
        busyFor(90)
        await sleep(15)
      }
      expect(calls).toBe(0)
      await sleep(250)
      expect(calls).toBeGreaterThanOrEqual(1)
    } finally {
      stop()
    }
    const after = calls
    await sleep(250)
    expect(calls).toBe(after)
  })
})
