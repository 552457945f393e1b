import { freezeWithJsonText, jsonTextOf, jsonWithHead } from '../src/json-text.ts'

describe('json-text', () => {
  it('keeps the text of a frozen value, and only of that very value', () => {
    const value = freezeWithJsonText({ quota: { used: 1, total: 5 }, items: [{ id: 1, at: 'x' }] })
    expect(jsonTextOf(value)).toBe(JSON.stringify(value))
    expect(jsonTextOf({ ...value })).toBeUndefined()
    expect(jsonTextOf('text')).toBeUndefined()
    expect(jsonTextOf(null)).toBeUndefined()
  })

  it('freezes all the way down, so no reader can change what the next one is answered with', () => {
    const value = freezeWithJsonText({ page: [{ id: 1, tags: ['a'] }], next: null })
    expect(Object.isFrozen(value)).toBe(true)
    expect(Object.isFrozen(value.page)).toBe(true)
    expect(Object.isFrozen(value.page[0])).toBe(true)
    expect(Object.isFrozen(value.page[0]!.tags)).toBe(true)
    expect(() => {
      'use strict'
      ;(value.page[0] as { id: number }).id = 2
    }).toThrow(TypeError)
  })

  it('splices a head in front exactly as JSON.stringify of the spread object', () => {
    const cases: object[] = [{ a: 1, b: 'two', c: [null, { d: '\u2028"' }] }, {}, { x: { y: {} } }]
    for (const plain of cases) {
      const frozen = freezeWithJsonText(structuredClone(plain))
      for (const head of [{ success: true }, {}, { success: true, n: 'é' }])
        expect(jsonWithHead(head, frozen)).toBe(JSON.stringify({ ...head, ...plain }))
      // Without kept text it serialises the spread itself.
      expect(jsonWithHead({ success: true }, structuredClone(plain))).toBe(
        JSON.stringify({ success: true, ...plain }),
      )
    }
  })
})
