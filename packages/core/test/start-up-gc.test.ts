import { constants, PerformanceObserver } from 'node:perf_hooks'
import { getHeapSpaceStatistics } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { collectStartUpGarbage } from '../src/start-up-gc.ts'

const youngBytes = () => getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')!.space_used_size

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
