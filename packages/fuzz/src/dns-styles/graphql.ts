import fc from 'fast-check'
import {
  buildSchema,
  type GraphQLField,
  type GraphQLInputType,
  GraphQLList,
  GraphQLNonNull,
  GraphQLObjectType,
  type GraphQLOutputType,
  GraphQLScalarType,
  type GraphQLSchema,
} from 'graphql'
import { type Credentials, type FuzzCase, CREDENTIAL_HEADERS } from '../cases.ts'
import { type Draft, type Mutation, mutation, setHeader } from '../draft.ts'
import { deepJsonText } from '../mutations/body.ts'
import { headMutations } from '../mutations/head.ts'
import { short } from '../mutations/short.ts'
import { type Hints, type JsonSchema, validValue } from '../schema.ts'
import { anyJson, nastyString, safeEncode } from '../strings.ts'
import { authModes, prefix, sourceAddress } from './shared.ts'

/** The schema dns-manager serves (from its exported SDL). */
export function graphqlSchema(sdl: string): GraphQLSchema {
  return buildSchema(sdl)
}

/** The SDL a running dns-manager publishes (`GET /graphql/schema.graphql`; introspection is off). */
export async function fetchGraphqlSdl(baseUrl: string): Promise<string> {
  const res = await fetch(`${baseUrl}/graphql/schema.graphql`, { signal: AbortSignal.timeout(10_000) })
  if (res.status !== 200) throw new Error(`${baseUrl}/graphql/schema.graphql answered ${res.status}`)
  return await res.text()
}

interface RootField {
  kind: 'query' | 'mutation'
  field: GraphQLField<unknown, unknown>
}

const unwrap = (t: GraphQLOutputType | GraphQLInputType): GraphQLOutputType | GraphQLInputType =>
  t instanceof GraphQLNonNull || t instanceof GraphQLList ? unwrap(t.ofType) : t

/** A selection of `type`'s fields, at most `depth` levels down. */
function selection(type: GraphQLOutputType, depth: number): fc.Arbitrary<string> {
  const named = unwrap(type)
  if (!(named instanceof GraphQLObjectType)) return fc.constant('')
  const fields = Object.values(named.getFields())
  const scalars = fields.filter((f) => unwrap(f.type) instanceof GraphQLScalarType)
  const objects = depth > 1 ? fields.filter((f) => unwrap(f.type) instanceof GraphQLObjectType) : []
  const parts: fc.Arbitrary<string>[] = [
    fc
      .subarray(
        scalars.map((f) => f.name),
        { minLength: scalars.length ? 1 : 0 },
      )
      .map((s) => s.join(' ')),
    ...objects.map((f) =>
      fc.option(
        selection(f.type, depth - 1).map((s) => `${f.name} ${s}`),
        { nil: '' },
      ),
    ),
  ]
  return fc.tuple(...parts).map((p) => `{ ${p.filter(Boolean).join(' ') || '__typename'} }`)
}

/** A literal of the argument's type, from the hints most of the time. */
function literal(type: GraphQLInputType, name: string, hints: Hints): fc.Arbitrary<string> {
  const base = unwrap(type)
  const scalar = base instanceof GraphQLScalarType ? base.name : 'String'
  const schema: JsonSchema =
    scalar === 'Int'
      ? { type: 'integer', minimum: 1, maximum: 1000 }
      : scalar === 'Boolean'
        ? { type: 'boolean' }
        : { type: 'string', maxLength: 30 }
  return validValue(schema, hints, name).map((v) =>
    scalar === 'Int' && typeof v === 'number'
      ? String(v)
      : scalar === 'Int'
        ? String(Number(v) || 1)
        : JSON.stringify(v),
  )
}

export function graphqlCases(schema: GraphQLSchema, creds: Credentials): fc.Arbitrary<FuzzCase> {
  const roots: RootField[] = [
    ...Object.values(schema.getQueryType()?.getFields() ?? {}).map((field) => ({
      kind: 'query' as const,
      field,
    })),
    ...Object.values(schema.getMutationType()?.getFields() ?? {}).map((field) => ({
      kind: 'mutation' as const,
      field,
    })),
  ]
  return fc.constantFrom(...authModes).chain((auth) => {
    const hints = creds.hints(auth)
    const document = fc.constantFrom(...roots).chain((root) =>
      fc
        .record({
          args: fc.tuple(
            ...root.field.args.map((a) =>
              fc.option(
                literal(a.type, a.name, hints).map((v) => `${a.name}: ${v}`),
                {
                  nil: '',
                  freq: a.type instanceof GraphQLNonNull ? 20 : 2,
                },
              ),
            ),
          ),
          sel: selection(root.field.type, 3),
        })
        .map(({ args, sel }) => {
          const a = args.filter(Boolean).join(', ')
          return {
            kind: root.kind,
            text: `${root.kind} { ${root.field.name}${a ? `(${a})` : ''} ${sel} }`,
            field: root.field.name,
          }
        }),
    )
    return fc
      .record({
        doc: document,
        docMutations: fc.array(documentMutation, { maxLength: 2 }),
        variables: fc.option(
          fc.oneof(fc.dictionary(fc.string({ maxLength: 5 }), anyJson, { maxKeys: 3 }), anyJson),
          { freq: 4 },
        ),
        transport: fc.constantFrom('POST', 'POST', 'POST', 'GET'),
        prefix,
        headers: creds.headers(
          {
            id: 'graphql',
            method: 'POST',
            path: '/graphql',
            pathParams: [],
            queryParams: [],
            security: ['apiKey'],
          },
          auth,
        ),
        head: fc.array(headMutations(CREDENTIAL_HEADERS['dns-manager']), { maxLength: 2 }),
        // Variables nested past core's limit: in the body (POST), or as JSON text in the query (GET;
        // at most 2,000 deep, 12 kB: the 16 kB header limit would answer first).
        deep: fc.option(
          fc.tuple(
            fc.constantFrom(65, 1000, 2000),
            fc.constantFrom<'arrays' | 'objects'>('arrays', 'objects'),
          ),
          { freq: 8 },
        ),
        from: sourceAddress,
      })
      .map(({ doc, docMutations, variables, transport, prefix: p, headers, head, deep, from }) => {
        let text = doc.text
        for (const m of docMutations) text = m.edit(text)
        const params: Record<string, unknown> = { query: text }
        if (variables !== null) params.variables = variables
        let draft: Draft =
          transport === 'GET'
            ? {
                method: 'GET',
                path: `${p}/graphql`,
                query: Object.entries(params).map(([k, v]): [string, string] => [
                  k,
                  safeEncode(typeof v === 'string' ? v : JSON.stringify(v)),
                ]),
                headers: [...headers],
              }
            : {
                method: 'POST',
                path: `${p}/graphql`,
                query: [],
                headers: [...headers],
                body: { json: params },
              }
        if (transport === 'POST') draft = setHeader(draft, 'Content-Type', 'application/json')
        const deepVariables = deep
          ? mutation(`variables nested ${deep[0]} deep (${deep[1]})`, (d) => {
              const text = deepJsonText(deep[0], deep[1])
              if (d.method === 'GET')
                // Brackets and braces raw in the query: their percent-encoded form would pass the
                // header limit long before the depth does.
                return { ...d, query: [...d.query.filter(([k]) => k !== 'variables'), ['variables', text]] }
              return {
                ...d,
                body: {
                  raw: Buffer.from(`{"query":${JSON.stringify(params.query)},"variables":{"v":${text}}}`),
                  note: `variables nested ${deep[0]} deep`,
                },
              }
            })
          : undefined
        if (deepVariables) draft = deepVariables.apply(draft)
        for (const m of head) draft = m.apply(draft)
        const names: Mutation[] = [
          mutation(`${transport} ${doc.field}`, (d) => d),
          ...docMutations.map((m) => mutation(m.name, (d) => d)),
          ...(variables !== null
            ? [mutation(`variables ${short(JSON.stringify(variables))}`, (d) => d)]
            : []),
          ...(deepVariables ? [deepVariables] : []),
          ...head,
        ]
        return {
          service: 'dns-manager' as const,
          operation: `${transport} /graphql ${doc.field}`,
          auth,
          mutations: names,
          draft,
          from,
        }
      })
  })
}

interface DocumentMutation {
  name: string
  edit(text: string): string
}
const edit = (name: string, f: (t: string) => string): DocumentMutation => ({ name, edit: f })

/** Changes to a document's text: wrong literals, escapes that decode to NUL or a lone surrogate, size, shape. */
const documentMutation: fc.Arbitrary<DocumentMutation> = fc.oneof(
  fc
    .constantFrom(
      '"\\u0000"',
      '"\\ud800"',
      '"\\udc00x"',
      '"a\\u0000b"',
      '1.5',
      '-1',
      '2147483648',
      'true',
      'null',
      '[1]',
      '{a: 1}',
      'ENUM',
      '"é"',
      `"${'x'.repeat(5000)}"`,
      '$undeclared',
    )
    .map((v) =>
      edit(`a literal → ${short(v)}`, (t) => t.replace(/:\s*("[^"]*"|-?\d+|true|false)/, `: ${v}`)),
    ),
  fc.constant(edit('unknown argument', (t) => t.replace(/\{ (\w+)/, '{ $1(nope: 1)'))),
  fc.constant(edit('unknown field', (t) => t.replace(/\{ ([^{}]*) \}\s*\}$/, '{ $1 no_such_field } }'))),
  fc.constant(edit('introspection', () => '{ __schema { types { name fields { name } } } }')),
  fc.constant(edit('__type', () => '{ __type(name: "Query") { name } }')),
  fc.constant(edit('__typename only', () => '{ __typename }')),
  fc.integer({ min: 10, max: 400 }).map((n) =>
    edit(`${n} aliases`, (t) => {
      const m = /^(query|mutation) \{ (.*) \}$/s.exec(t)
      if (!m) return t
      return `${m[1]} { ${Array.from({ length: n }, (_, i) => `a${i}: ${m[2]}`).join(' ')} }`
    }),
  ),
  fc
    .integer({ min: 9, max: 5000 })
    .map((n) => edit(`nesting ${n}`, () => `{ quota ${'{ quota '.repeat(n)}{ used }${' }'.repeat(n)} }`)),
  fc
    .integer({ min: 17, max: 4000 })
    .map((n) =>
      edit(
        `brackets ${n}`,
        () => `{ whois(domain: ${'['.repeat(n)}"x"${']'.repeat(n)}) { whois { domain } } }`,
      ),
    ),
  fc.constant(
    edit(
      'cyclic fragments',
      () => '{ ...A } fragment A on Query { ...B quota { balance_cents } } fragment B on Query { ...A }',
    ),
  ),
  fc.constant(edit('fragment on a wrong type', () => '{ ...F } fragment F on Nope { x }')),
  fc.constant(
    edit(
      'two operations',
      (t) => `query A ${t.replace(/^(query|mutation)/, '')} query B { quota { balance_cents } }`,
    ),
  ),
  fc.constant(edit('directive with a wrong argument', (t) => t.replace(/\{ (\w+)/, '{ $1 @skip(if: "yes")'))),
  fc.constant(edit('unknown directive', (t) => t.replace(/\{ (\w+)/, '{ $1 @nope'))),
  fc.constant(
    edit(
      'variables declared',
      () =>
        'query Q($id: Int!, $d: String) { subdomain(id: $id) { subdomain { id } } whois(domain: $d) { whois { domain } } }',
    ),
  ),
  fc.constant(edit('subscription', () => 'subscription { quota { balance_cents } }')),
  fc.nat().map((n) => edit(`truncated at ${n}`, (t) => t.slice(0, n % Math.max(t.length, 1)))),
  fc.constant(edit('empty document', () => '')),
  fc.constant(edit('a comment only', () => '# nothing')),
  fc
    .integer({ min: 2001, max: 20_000 })
    .map((n) => edit(`${n} tokens`, () => `{ quota { ${'balance_cents '.repeat(n)} } }`)),
  nastyString.map((s) => edit(`document ${short(s)}`, () => s)),
)
