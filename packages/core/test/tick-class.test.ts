import { executionAsyncResource } from 'node:async_hooks'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { keepTickObjectClass, keptTickObject } from '../src/tick-class.ts'

// V8's own functions, for this test only: a full collection, and whether two objects share a
// hidden class (%HaveSameMap, compiled while natives syntax is on).
setFlagsFromString('--expose-gc')
setFlagsFromString('--allow-natives-syntax')
const fullCollection = runInNewContext('gc') as () => void
const haveSameMap = new Function('a', 'b', 'return %HaveSameMap(a, b)') as (a: object, b: object) => boolean
setFlagsFromString('--no-allow-natives-syntax')
setFlagsFromString('--no-expose-gc')

const nextTickObject = () =>
  new Promise<object>((resolve) => process.nextTick(() => resolve(executionAsyncResource())))

describe('keepTickObjectClass', () => {
  it('holds a tick object that shares its hidden class with the ticks queued after full collections', async () => {
    keepTickObjectClass()
    keepTickObjectClass() // a second call keeps the same one
    await new Promise((resolve) => setImmediate(resolve))
    const kept = keptTickObject()
    // A tick object: node's callback and args, and its two ids under symbol keys (an
    // AsyncLocalStorage on async hooks, as Jest's on Node 20, adds one more).
    expect(kept).toEqual(expect.objectContaining({ callback: expect.any(Function) }))
    expect(Object.getOwnPropertySymbols(kept).map((key) => key.description)).toEqual(
      expect.arrayContaining(['async_id_symbol', 'trigger_async_id_symbol']),
    )
    for (let i = 0; i < 3; i++) fullCollection()
    const fresh = await nextTickObject()
    expect(fresh).not.toBe(kept)
    expect(haveSameMap(kept!, fresh)).toBe(true)
    expect(keptTickObject()).toBe(kept)
  })

  it('the comparison tells classes apart', async () => {
    // So that the assertion above can fail: a tick and an object of another shape differ.
    const fresh = await nextTickObject()
    expect(haveSameMap(fresh, { callback: () => {}, args: undefined })).toBe(false)
  })
})
