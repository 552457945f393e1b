import { runInNewContext } from 'node:vm'
import { collectStartUpGarbage } from '../src/start-up-gc.ts'

/** The one full collection `runService` makes between start-up and serving. */
describe('collectStartUpGarbage', () => {
  it('collects what is no longer reachable', async () => {
    let ref: WeakRef<object> | undefined
    ;(() => {
      ref = new WeakRef({ made: 'at start-up', bytes: new Array(1000).fill('x') })
    })()
    expect(ref!.deref()).toBeDefined()
    // A WeakRef's target is kept until the job that made or dereferenced it ends.
    await new Promise((resolve) => setImmediate(resolve))
    collectStartUpGarbage()
    expect(ref!.deref()).toBeUndefined()
  })

  it('leaves no gc function behind, here or in a context made later', () => {
    collectStartUpGarbage()
    expect((globalThis as { gc?: unknown }).gc).toBeUndefined()
    expect(runInNewContext('typeof gc')).toBe('undefined')
  })

  it('collects with one tick queued, which runs afterwards', async () => {
    // Without it, V8 frees the hidden class of node's tick objects and stops caching their
    // shape for good (see start-up-gc.ts): every later tick costs a runtime call.
    const nextTick = jest.spyOn(process, 'nextTick')
    try {
      collectStartUpGarbage()
      expect(nextTick).toHaveBeenCalledTimes(1)
    } finally {
      nextTick.mockRestore()
    }
    await new Promise((resolve) => setImmediate(resolve))
  })
})
