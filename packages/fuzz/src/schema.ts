import fc from 'fast-check'
import { anyJson, nastyString } from './strings.ts'

/** The part of JSON Schema 2020-12 the services' documents use (zod 4's output). */
export interface JsonSchema {
  type?: string | string[]
  properties?: Record<string, JsonSchema>
  required?: string[]
  additionalProperties?: boolean | JsonSchema
  items?: JsonSchema
  minItems?: number
  maxItems?: number
  minLength?: number
  maxLength?: number
  pattern?: string
  format?: string
  enum?: unknown[]
  const?: unknown
  minimum?: number
  maximum?: number
  exclusiveMinimum?: number
  exclusiveMaximum?: number
  anyOf?: JsonSchema[]
  oneOf?: JsonSchema[]
  allOf?: JsonSchema[]
  default?: unknown
}

/**
 * Values a field may take that reach past validation: ids, hashes, pathnames and codes the
 * suite made in its setup, by field name. A generated request uses one of them most of the
 * time, so that it reaches the domain and the database rather than only the validator.
 */
export type Hints = Record<string, readonly unknown[]>

/** An arbitrary of values valid against `schema` (as far as a generator can tell), hints preferred. */
export function validValue(schema: JsonSchema | undefined, hints: Hints, name = ''): fc.Arbitrary<unknown> {
  const hinted = name && hints[name]?.length ? hints[name] : undefined
  const own = plainValid(schema ?? {}, hints)
  if (!hinted) return own
  return fc.oneof({ arbitrary: fc.constantFrom(...hinted), weight: 4 }, { arbitrary: own, weight: 1 })
}

function plainValid(schema: JsonSchema, hints: Hints): fc.Arbitrary<unknown> {
  if (schema.const !== undefined) return fc.constant(schema.const)
  if (schema.enum?.length) return fc.constantFrom(...schema.enum)
  const alternatives = schema.anyOf ?? schema.oneOf
  if (alternatives?.length) return fc.oneof(...alternatives.map((s) => plainValid(s, hints)))
  if (schema.allOf?.length) return plainValid(schema.allOf[0]!, hints)
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type
  switch (type) {
    case 'string':
      return stringValue(schema)
    case 'integer': {
      const min = Math.max(schema.minimum ?? -1000, Number.MIN_SAFE_INTEGER)
      const max = Math.min(schema.maximum ?? Math.max(min + 1000, 1000), Number.MAX_SAFE_INTEGER)
      return fc.oneof(
        fc.integer({ min: Math.ceil(min), max: Math.floor(Math.min(max, min + 100)) }),
        fc.constantFrom(Math.ceil(min), Math.floor(max)),
        fc.integer({ min: Math.ceil(min), max: Math.floor(max) }),
      )
    }
    case 'number': {
      const min = schema.minimum ?? schema.exclusiveMinimum ?? -1e6
      const max = schema.maximum ?? schema.exclusiveMaximum ?? 1e6
      return fc.oneof(
        fc.double({ min, max, noNaN: true, noDefaultInfinity: true }),
        fc.integer({ min: Math.ceil(min), max: Math.floor(Math.min(max, min + 1000)) }),
      )
    }
    case 'boolean':
      return fc.boolean()
    case 'null':
      return fc.constant(null)
    case 'array': {
      const minLength = schema.minItems ?? 0
      const maxLength = Math.max(minLength, Math.min(schema.maxItems ?? 3, minLength + 3))
      return fc.array(validValue(schema.items, hints), { minLength, maxLength })
    }
    case 'object':
      return objectValue(schema, hints)
    default:
      if (schema.properties) return objectValue(schema, hints)
      return anyJson
  }
}

function objectValue(schema: JsonSchema, hints: Hints): fc.Arbitrary<unknown> {
  const properties = schema.properties ?? {}
  const required = new Set(schema.required ?? [])
  const names = Object.keys(properties)
  if (names.length === 0) return fc.constant({})
  const model: Record<string, fc.Arbitrary<unknown>> = {}
  for (const name of names) model[name] = validValue(properties[name], hints, name)
  return fc.record(model, { requiredKeys: names.filter((n) => required.has(n)) })
}

function stringValue(schema: JsonSchema): fc.Arbitrary<string> {
  if (schema.format === 'date-time')
    return fc
      .date({
        min: new Date('2000-01-01T00:00:00Z'),
        max: new Date('2100-01-01T00:00:00Z'),
        noInvalidDate: true,
      })
      .map((d) => d.toISOString())
  if (schema.format === 'email') return fc.emailAddress()
  if (schema.format === 'uri' || schema.format === 'url') return fc.webUrl()
  if (schema.pattern) {
    try {
      const minLength = schema.minLength ?? 0
      const maxLength = schema.maxLength ?? Infinity
      // One character class repeated (`^[A-Za-z0-9_-]+$`, a base64url field of at least 52
      // characters): made to length from that class, since the generator below rarely reaches a
      // length bound far from its own sizes and its filter would draw for ever.
      const repeated = /^\^(\[[^\]]+\]|\\[dw])([+*])\$$/.exec(schema.pattern)
      if (repeated) {
        const least = Math.max(minLength, repeated[2] === '+' ? 1 : 0)
        return fc.string({
          unit: fc.stringMatching(new RegExp(`^${repeated[1]}$`)),
          minLength: least,
          maxLength: Math.max(least, Math.min(maxLength, least + 40)),
        })
      }
      // A bounded field gets the smallest repetitions the pattern allows: at fast-check's default
      // size, a pattern of repeated groups (a media type's `(;name=value)*`) makes strings far
      // over a 255-character bound, and the filter below then drew for minutes.
      return fc
        .stringMatching(new RegExp(schema.pattern), Number.isFinite(maxLength) ? { size: 'xsmall' } : {})
        .filter((s) => s.length >= minLength && s.length <= maxLength)
    } catch {
      // a pattern fast-check cannot generate from: fall back to its bounds
    }
  }
  const minLength = schema.minLength ?? 0
  const maxLength = Math.max(minLength, Math.min(schema.maxLength ?? 40, minLength + 40))
  return fc.string({ minLength, maxLength, unit: 'grapheme-ascii' })
}

/** A value of another JSON type than `schema` says (or a nasty one of the same type). */
export function wrongValue(schema: JsonSchema | undefined): fc.Arbitrary<unknown> {
  const type = Array.isArray(schema?.type) ? schema?.type[0] : schema?.type
  const others: fc.Arbitrary<unknown>[] = [anyJson]
  if (type === 'string' || type === undefined) {
    others.push(fc.integer(), fc.boolean(), fc.constant(null), fc.constant([]), fc.constant({}))
    others.push(nastyString)
    if (schema?.maxLength) others.push(fc.constant('x'.repeat(schema.maxLength + 1)))
  }
  if (type === 'integer' || type === 'number') {
    others.push(
      fc.constantFrom(
        '1',
        -1,
        0.5,
        1.7976931348623157e308,
        2 ** 31,
        2 ** 53,
        -(2 ** 63),
        Number.MAX_SAFE_INTEGER + 2,
        Number.MAX_VALUE,
        Number.MIN_VALUE,
        -0,
        1e21,
        1e-7,
        true,
        null,
      ),
    )
    // The largest value the field takes is valid, and sums of it must still fit (a ledger's total).
    if (schema?.maximum !== undefined)
      others.push(fc.constant(schema.maximum), fc.constant(schema.maximum + 1))
    if (schema?.minimum !== undefined) others.push(fc.constant(schema.minimum - 1))
  }
  if (type === 'array') others.push(fc.constant({}), fc.constant('[]'), fc.array(anyJson, { maxLength: 3 }))
  if (type === 'object') others.push(fc.constant([]), fc.constant('{}'), fc.constant(1))
  if (type === 'boolean') others.push(fc.constantFrom('true', 1, 0, 'yes', null))
  return fc.oneof(...others)
}
