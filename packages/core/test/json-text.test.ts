import { freezeWithJson, jsonBytesOf, jsonWithHead, withHead } from '../src/json-text.ts'

describe('json-text', () => {
  it('keeps the JSON bytes of a frozen value, and only of that very value', () => {
    const value = freezeWithJson({ quota: { used: 1, total: 5 }, items: [{ id: 1, at: 'é\u{1F600}' }] })
    expect(jsonBytesOf(value)?.toString('utf8')).toBe(JSON.stringify(value))
    expect(jsonBytesOf({ ...value })).toBeUndefined()
    expect(jsonBytesOf('text')).toBeUndefined()
    expect(jsonBytesOf(null)).toBeUndefined()
  })

  it('freezes all the way down, so no reader can change what the next one is answered with', () => {
    const value = freezeWithJson({ page: [{ id: 1, tags: ['a'] }], next: null })
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
      const frozen = freezeWithJson(structuredClone(plain))
      for (const head of [{ success: true }, {}, { success: true, n: 'é' }])
        expect(jsonWithHead(head, frozen).toString('utf8')).toBe(JSON.stringify({ ...head, ...plain }))
      // Without kept text it serialises the spread itself.
      expect(jsonWithHead({ success: true }, structuredClone(plain)).toString('utf8')).toBe(
        JSON.stringify({ success: true, ...plain }),
      )
    }
  })

  it('joins a head and a value when serialised: JSON.stringify and the spliced bytes give the same text', () => {
    const value = freezeWithJson({ page: [{ id: 1 }], next: 'é' })
    const joined = withHead({ success: true }, value)
    expect(JSON.stringify(joined)).toBe(JSON.stringify({ success: true, page: [{ id: 1 }], next: 'é' }))
    expect(jsonBytesOf(joined)!.toString('utf8')).toBe(JSON.stringify(joined))
    // A value without kept bytes: serialised, the same text either way.
    const plain = withHead({ success: true }, { a: 1 })
    expect(jsonBytesOf(plain)!.toString('utf8')).toBe(JSON.stringify(plain))
    expect(JSON.stringify(plain)).toBe('{"success":true,"a":1}')
  })
})
