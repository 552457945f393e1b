import { createTestKv, describeWhen } from '@quartet/core/testing'
import { withKvDeadline } from '../../src/store/kv-deadline.ts'

// The deadline of the paths that can do without kv (take, download, limits) blames kv only for
// its own lateness: a process busy past the deadline while the answer arrived still gets it.
describeWhen({ env: ['REDIS_URL'] }, 'the kv deadline', () => {
  it('when this process is busy past the deadline while kv answers, then the call succeeds and kv is not skipped after', async () => {
    const kv = createTestKv()
    // 1 s, and held for 2.5: a Redis shared by a loaded CI run once took past 200 ms to answer
    // the set before the test had begun.
    const bounded = withKvDeadline(kv, { timeoutMs: 1_000, pauseMs: 60_000 })
    try {
      await bounded.set('k', 'v')
      const read = bounded.get('k')
      // Microtasks only (no I/O): the command goes out, its answer is not read yet.
      for (let i = 0; i < 10; i++) await null
      const until = Date.now() + 2_500
      while (Date.now() < until);
      await expect(read).resolves.toBe('v')
      // Not paused (a pause would last a minute here).
      await expect(bounded.get('k')).resolves.toBe('v')
    } finally {
      await kv.close()
    }
  })
})
