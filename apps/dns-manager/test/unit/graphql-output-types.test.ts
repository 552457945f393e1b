import {
  buildSchema,
  getNamedType,
  type GraphQLField,
  type GraphQLOutputType,
  isListType,
  isNonNullType,
  isObjectType,
  isScalarType,
} from 'graphql'
import { z } from 'zod'
import { graphqlSchemaSource } from '../../src/http/graphql-schema.ts'
import { dnsOperations } from '../../src/http/operations.ts'

/**
 * The GraphQL output types are SDL written beside the operations (graphql-schema.ts); the
 * operations' output schemas (http/operations/outputs.ts) are what every call style answers.
 * This walks both, so the SDL cannot drift from them: the same fields, the same nullability,
 * the same scalars, lists and nested objects.
 */
type Json = {
  type?: string | string[]
  properties?: Record<string, Json>
  required?: string[]
  items?: Json
  anyOf?: Json[]
  enum?: unknown[]
  const?: unknown
}

const SCALARS: Record<string, string> = { String: 'string', Int: 'integer', Boolean: 'boolean' }

/** A JSON schema without its `null` alternative, and whether it had one. */
function nullableOf(schema: Json): { schema: Json; nullable: boolean } {
  if (Array.isArray(schema.type) && schema.type.includes('null')) {
    const rest = schema.type.filter((t) => t !== 'null')
    return { schema: { ...schema, type: rest.length === 1 ? rest[0] : rest }, nullable: true }
  }
  if (schema.anyOf) {
    const rest = schema.anyOf.filter((s) => s.type !== 'null')
    if (rest.length === 1 && rest.length < schema.anyOf.length) return { schema: rest[0]!, nullable: true }
  }
  return { schema, nullable: false }
}

function kindOf(schema: Json): string {
  if (schema.type) return String(schema.type)
  if (schema.const !== undefined) return typeof schema.const
  if (schema.enum?.every((v) => typeof v === 'string')) return 'string'
  return JSON.stringify(schema)
}

/** Every difference between a GraphQL output type and a JSON schema, with where it is. */
function differences(type: GraphQLOutputType, schema: Json, required: boolean, at: string): string[] {
  const { schema: inner, nullable } = nullableOf(schema)
  const nonNull = isNonNullType(type)
  if (nonNull !== (required && !nullable))
    return [`${at}: GraphQL says ${nonNull ? 'non-null' : 'nullable'}, the output schema the opposite`]
  const t = nonNull ? type.ofType : type
  if (isListType(t))
    return kindOf(inner) === 'array'
      ? differences(t.ofType, inner.items!, true, `${at}[]`)
      : [`${at}: a list in GraphQL, ${kindOf(inner)} in the output schema`]
  if (isScalarType(t))
    return SCALARS[t.name] === kindOf(inner)
      ? []
      : [`${at}: ${t.name} in GraphQL, ${kindOf(inner)} in the output schema`]
  if (isObjectType(t)) return objectDifferences(t.getFields(), inner, at)
  return [`${at}: ${getNamedType(t).name} is not an object, list or scalar`]
}

function objectDifferences(fields: Record<string, GraphQLField<unknown, unknown>>, schema: Json, at: string) {
  if (kindOf(schema) !== 'object')
    return [`${at}: an object in GraphQL, ${kindOf(schema)} in the output schema`]
  const properties = schema.properties ?? {}
  const out: string[] = []
  for (const name of Object.keys(properties))
    if (!fields[name]) out.push(`${at}.${name}: in the output schema, not in GraphQL`)
  for (const [name, field] of Object.entries(fields)) {
    const property = properties[name]
    if (!property) out.push(`${at}.${name}: in GraphQL, not in the output schema`)
    else
      out.push(
        ...differences(field.type, property, schema.required?.includes(name) ?? false, `${at}.${name}`),
      )
  }
  return out
}

describe('the GraphQL output types', () => {
  const schema = buildSchema(graphqlSchemaSource(dnsOperations))

  it.each(dnsOperations.map((op) => [op.name, op] as const))(
    'when %s is a GraphQL field, then its type is its output schema field by field',
    (_name, op) => {
      const root = op.graphql.kind === 'query' ? schema.getQueryType()! : schema.getMutationType()!
      const field = root.getFields()[op.graphql.field]
      expect(field).toBeDefined()
      const type = getNamedType(field!.type)
      expect(isObjectType(type)).toBe(true)
      const json = z.toJSONSchema(op.output, { io: 'output', unrepresentable: 'any' }) as Json
      expect(
        objectDifferences((type as unknown as { getFields(): never }).getFields(), json, op.graphql.field),
      ).toEqual([])
    },
  )

  it('when an output schema and its GraphQL type differ, then the walk names the field', () => {
    const drifted = buildSchema('type Query { q: T } type T { a: Int! b: String c: [Int!]! }')
    const json = z.toJSONSchema(
      z.object({ a: z.number().int().nullable(), b: z.boolean().nullable(), d: z.string() }),
    ) as Json
    const fields = (drifted.getType('T') as unknown as { getFields(): never }).getFields()
    expect(objectDifferences(fields, json, 'T')).toEqual([
      'T.d: in the output schema, not in GraphQL',
      'T.a: GraphQL says non-null, the output schema the opposite',
      'T.b: String in GraphQL, boolean in the output schema',
      'T.c: in GraphQL, not in the output schema',
    ])
  })
})
