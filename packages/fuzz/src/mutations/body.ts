import fc from 'fast-check'
import { type Draft, type Mutation, mutation } from '../draft.ts'
import { type JsonSchema, wrongValue } from '../schema.ts'
import { anyJson, nastyString } from '../strings.ts'
import { short } from './short.ts'

interface Field {
  path: Array<string | number>
  schema: JsonSchema
  required: boolean
}

/** The body's fields down to two levels (the first item of an array standing for all). */
export function fieldsOf(
  schema: JsonSchema | undefined,
  depth = 2,
  at: Array<string | number> = [],
): Field[] {
  if (!schema || depth === 0) return []
  const out: Field[] = []
  const required = new Set(schema.required ?? [])
  for (const [name, s] of Object.entries(schema.properties ?? {})) {
    const path = [...at, name]
    out.push({ path, schema: s, required: required.has(name) })
    if (s.type === 'array' && s.items) {
      out.push({ path: [...path, 0], schema: s.items, required: (s.minItems ?? 0) > 0 })
      out.push(...fieldsOf(s.items, depth - 1, [...path, 0]))
    } else if (s.properties) out.push(...fieldsOf(s, depth - 1, path))
  }
  return out
}

/** Body mutations: a field of the wrong type or a nasty value, a field missing, an extra one, the body replaced. */
export function bodyMutations(schema: JsonSchema | undefined, bodyLimit: number): fc.Arbitrary<Mutation> {
  const fields = fieldsOf(schema)
  const whole = wholeBodyMutations(bodyLimit)
  if (!fields.length) return whole
  const field = fc.constantFrom(...fields)
  return fc.oneof(
    {
      arbitrary: field
        .chain((f) => fc.tuple(fc.constant(f), wrongValue(f.schema)))
        .map(([f, v]) =>
          mutation(`body.${f.path.join('.')} = ${short(JSON.stringify(v) ?? 'undefined')}`, (d) =>
            editJson(d, f.path, v),
          ),
        ),
      weight: 4,
    },
    {
      arbitrary: fc
        .tuple(field, nastyString)
        .map(([f, v]) =>
          mutation(`body.${f.path.join('.')} = ${short(JSON.stringify(v))}`, (d) => editJson(d, f.path, v)),
        ),
      weight: 3,
    },
    {
      arbitrary: field.map((f) =>
        mutation(`no body.${f.path.join('.')}`, (d) => editJson(d, f.path, REMOVE)),
      ),
      weight: 2,
    },
    {
      arbitrary: fc
        .tuple(fc.oneof(nastyString, fc.constantFrom('__proto__', 'constructor', 'x')), anyJson)
        .map(([k, v]) => mutation(`extra body.${short(k)}`, (d) => editJson(d, [k], v))),
      weight: 1,
    },
    { arbitrary: whole, weight: 3 },
    ...atTheirMaximum(fields).map((arbitrary) => ({ arbitrary, weight: 1 })),
  )
}

/**
 * For an array of objects with number fields that have a maximum (key-info's usage events): the
 * array filled to its maxItems with copies of its first item, every such number at its maximum
 * and every `id` made unique, so that each copy counts. Sent a few times, totals reach what a
 * database column holds (a key's usage past BIGINT was a 500).
 */
function atTheirMaximum(fields: Field[]): Array<fc.Arbitrary<Mutation>> {
  return fields
    .filter((f) => f.schema.type === 'array' && f.schema.maxItems && f.schema.items?.properties)
    .flatMap((f) => {
      const items = f.schema.items!
      const maxima = Object.entries(items.properties ?? {}).filter(
        ([, s]) => (s.type === 'number' || s.type === 'integer') && s.maximum !== undefined,
      )
      if (!maxima.length) return []
      return [
        fc.integer({ min: 0, max: 2 ** 30 }).map((salt) =>
          mutation(`body.${f.path.join('.')}: ${f.schema.maxItems} items, numbers at their maximum`, (d) => {
            if (!d.body || !('json' in d.body)) return d
            const first = valueAt(d.body.json, [...f.path, 0])
            if (first === null || typeof first !== 'object') return d
            const filled = Array.from({ length: f.schema.maxItems! }, (_, i) => {
              const item: Record<string, unknown> = { ...(first as Record<string, unknown>) }
              for (const [name, s] of maxima) item[name] = s.maximum
              if (typeof item.id === 'string') item.id = `${item.id}-max-${salt}-${i}`
              return item
            })
            return editJson(d, f.path, filled)
          }),
        ),
      ]
    })
}

function valueAt(root: unknown, path: Array<string | number>): unknown {
  let node = root
  for (const key of path) {
    if (node === null || typeof node !== 'object') return undefined
    node = (node as Record<string | number, unknown>)[key]
  }
  return node
}

/**
 * JSON nested `depth` deep, as text: never built as a value here, since JSON.stringify of one
 * would exhaust this process's stack as it once did the services'.
 */
export function deepJsonText(depth: number, kind: 'arrays' | 'objects'): string {
  return kind === 'arrays'
    ? '['.repeat(depth) + ']'.repeat(depth)
    : '{"a":'.repeat(depth) + '1' + '}'.repeat(depth)
}

/**
 * A body that stays what it was, with one more member holding deeply nested JSON (in a batch's
 * first call): the depth alone is what the service must refuse, and before anything recursive
 * sees it. Depths around core's limit (64) and far past it.
 */
export const deepMember: fc.Arbitrary<Mutation> = fc
  .tuple(
    fc.constantFrom(64, 65, 1000, 5000, 10_000),
    fc.constantFrom<'arrays' | 'objects'>('arrays', 'objects'),
  )
  .map(([depth, kind]) =>
    mutation(`body: a member nested ${depth} deep (${kind})`, (d) => ({
      ...d,
      body: {
        raw: Buffer.from(withMember(bodyText(d), `"deep":${deepJsonText(depth, kind)}`)),
        note: `a member nested ${depth} deep`,
      },
    })),
  )

function bodyText(d: Draft): string {
  if (!d.body) return '{}'
  return 'raw' in d.body ? d.body.raw.toString('utf8') : (JSON.stringify(d.body.json) ?? '{}')
}

function withMember(json: string, member: string): string {
  const text = json.trimStart()
  if (text.startsWith('[') && text.slice(1).trimStart().startsWith('{'))
    return `[${withMember(text.slice(1), member)}`
  if (!text.startsWith('{')) return `{${member},"body":${text || 'null'}}`
  const rest = text.slice(1).trimStart()
  return `{${member}${rest.startsWith('}') ? '' : ','}${rest}`
}

/** The first number of a body replaced by numeric text JSON.parse reads as ±Infinity, 0 or a rounded value. */
const numericText: fc.Arbitrary<Mutation> = fc
  .constantFrom(
    '1e999',
    '-1e999',
    '1e-999',
    '-0.0',
    '123456789012345678901234567890',
    '9223372036854775808',
    '0.0000001e7',
  )
  .map((n) =>
    mutation(`body: first number as ${n}`, (d) => {
      const text = bodyText(d)
      const replaced = text.replace(/:\s*-?\d+(\.\d+)?([eE][+-]?\d+)?/, `:${n}`)
      return {
        ...d,
        body: { raw: Buffer.from(replaced === text ? `{"a":${n}}` : replaced), note: `number ${n}` },
      }
    }),
  )

const REMOVE = Symbol('remove')

function editJson(d: Draft, path: Array<string | number>, value: unknown): Draft {
  if (!d.body || !('json' in d.body)) return d
  const root = structuredClone(d.body.json) as unknown
  if (root === null || typeof root !== 'object') return d
  let node = root as Record<string | number, unknown>
  for (const key of path.slice(0, -1)) {
    const next = node[key]
    if (next === null || typeof next !== 'object') return d
    node = next as Record<string | number, unknown>
  }
  const last = path[path.length - 1]!
  if (value === REMOVE) delete node[last]
  else if (last === '__proto__')
    Object.defineProperty(node, last, { value, enumerable: true, configurable: true, writable: true })
  else node[last] = value
  return { ...d, body: { json: root } }
}

/** The whole body replaced: other JSON values, broken JSON, bytes that are not UTF-8, too many bytes. */
function wholeBodyMutations(bodyLimit: number): fc.Arbitrary<Mutation> {
  const raw = (note: string, make: (d: Draft) => Buffer) =>
    mutation(`body: ${note}`, (d) => ({ ...d, body: { raw: make(d), note } }))
  const current = (d: Draft) =>
    d.body
      ? 'raw' in d.body
        ? d.body.raw
        : Buffer.from(JSON.stringify(d.body.json) ?? '{}')
      : Buffer.from('{}')
  return fc.oneof(
    deepMember,
    numericText,
    anyJson.map((v) => mutation(`body = ${short(JSON.stringify(v))}`, (d) => ({ ...d, body: { json: v } }))),
    fc.constant(mutation('no body', (d) => ({ ...(({ body: _b, ...rest }) => rest)(d) }))),
    fc.constantFrom(
      raw('empty', () => Buffer.alloc(0)),
      raw('truncated', (d) => current(d).subarray(0, Math.max(1, current(d).length - 2))),
      raw('trailing garbage', (d) => Buffer.concat([current(d), Buffer.from('}garbage')])),
      raw('trailing comma', () => Buffer.from('{"a":1,}')),
      raw('single quotes', () => Buffer.from("{'a':1}")),
      raw('BOM first', (d) => Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), current(d)])),
      raw('UTF-16LE', (d) => Buffer.from(current(d).toString('utf8'), 'utf16le')),
      raw('bytes that are not UTF-8 in a string', (d) => notUtf8(current(d))),
      raw('an escaped lone surrogate', () =>
        Buffer.from('{"name":"\\ud800","password":"\\udc00x","code":"\\ud800"}'),
      ),
      raw('an escaped NUL', () => Buffer.from('{"name":"a\\u0000b","password":"\\u0000","query":"\\u0000"}')),
      raw('NaN and Infinity', () => Buffer.from('{"a":NaN,"b":Infinity}')),
      raw('duplicate keys', (d) =>
        Buffer.from(current(d).toString().replace(/^\{/, '{"__proto__":{"x":1},"a":1,"a":2,')),
      ),
      raw('deep nesting (arrays)', () => Buffer.from(`${'['.repeat(50_000)}${']'.repeat(50_000)}`)),
      raw('deep nesting (objects)', () => Buffer.from(`${'{"a":'.repeat(20_000)}1${'}'.repeat(20_000)}`)),
      raw('a huge number', () => Buffer.from(`{"a":1${'0'.repeat(5000)}}`)),
      raw('binary', () => Buffer.from([0x00, 0xff, 0x01, 0xfe, 0x7f, 0x80])),
      raw('over the body limit', (d) => overLimit(current(d), bodyLimit)),
      raw('many keys', () =>
        Buffer.from(
          JSON.stringify(Object.fromEntries(Array.from({ length: 20_000 }, (_, i) => [`k${i}`, i]))),
        ),
      ),
      raw('form-encoded', () => Buffer.from('a=1&b[c]=2&__proto__[x]=1')),
    ),
  )
}

function notUtf8(json: Buffer): Buffer {
  const text = json.toString('latin1')
  const at = text.indexOf('":"')
  if (at < 0) return Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]) // {"a":"\xff\xfe"}
  return Buffer.concat([
    json.subarray(0, at + 3),
    Buffer.from([0xc3, 0x28, 0xed, 0xa0, 0x80]),
    json.subarray(at + 3),
  ])
}

/** A body of valid JSON just past the limit: the server must refuse it (413) without reading it all. */
function overLimit(json: Buffer, limit: number): Buffer {
  const pad = Math.max(limit + 1024 - json.length, 1024)
  return Buffer.from(`{"pad":"${'a'.repeat(pad)}","rest":${json.toString('utf8') || 'null'}}`)
}
