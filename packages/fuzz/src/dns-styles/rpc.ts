import fc from 'fast-check'
import { type Credentials, type FuzzCase, CREDENTIAL_HEADERS } from '../cases.ts'
import { type Draft, mutation } from '../draft.ts'
import { deepMember } from '../mutations/body.ts'
import { headMutations } from '../mutations/head.ts'
import { short } from '../mutations/short.ts'
import type { OperationSpec } from '../openapi.ts'
import { type JsonSchema, validValue, wrongValue } from '../schema.ts'
import { anyJson, nastyString } from '../strings.ts'
import { authModes, prefix, sourceAddress } from './shared.ts'

/** A JSON-RPC method and the schema of its named params (the operation's path, query and body fields). */
export interface RpcMethod {
  name: string
  params: JsonSchema
}

/**
 * The names of dns-manager's JSON-RPC methods, read off its OpenAPI document: each operation of
 * its registry is documented under `/rest/` with the method name as operationId, and a second
 * route of the same operation (a PATCH or DELETE on the resource URL) as `<name>.<verb>`, which
 * is not a method (dns-manager's openApiDocument, src/app.ts). Read from the running service, so
 * the suite drives dns-manager over HTTP only and imports none of its code.
 */
export function rpcMethodNames(operations: OperationSpec[]): Set<string> {
  const rest = operations.filter((op) => op.path.startsWith('/rest/'))
  const ids = new Set(rest.map((op) => op.id))
  const isSecondRoute = (op: OperationSpec) => {
    const verb = `.${op.method.toLowerCase()}`
    return op.id.endsWith(verb) && ids.has(op.id.slice(0, -verb.length))
  }
  return new Set(rest.filter((op) => !isSecondRoute(op)).map((op) => op.id))
}

/**
 * dns-manager's JSON-RPC methods: the OpenAPI operations whose ids are method names
 * (rpcMethodNames; the REST-only aliases, such as `dns_records.update.patch`, are not).
 */
export function rpcMethods(operations: OperationSpec[], registryNames: ReadonlySet<string>): RpcMethod[] {
  const out: RpcMethod[] = []
  for (const op of operations) {
    if (!registryNames.has(op.id)) continue
    const properties: Record<string, JsonSchema> = { ...(op.body?.properties ?? {}) }
    const required = [...(op.body?.required ?? [])]
    for (const p of op.pathParams) {
      properties[p.name] = p.schema.type === 'string' && /id$/.test(p.name) ? coerceId(p.schema) : p.schema
      required.push(p.name)
    }
    for (const q of op.queryParams) {
      properties[q.name] = q.schema
      if (q.required) required.push(q.name)
    }
    out.push({ name: op.id, params: { type: 'object', properties, required } })
  }
  return out
}

/** Path ids are strings in a URL, numbers in JSON-RPC params: either may be sent. */
const coerceId = (schema: JsonSchema): JsonSchema => ({ anyOf: [schema, { type: 'integer', minimum: 1 }] })

export function rpcCases(methods: RpcMethod[], creds: Credentials): fc.Arbitrary<FuzzCase> {
  return fc.constantFrom(...authModes).chain((auth) => {
    const hints = creds.hints(auth)
    const call = fc.constantFrom(...methods).chain((m) =>
      fc.record({
        method: fc.constant(m.name),
        params: validValue(m.params, hints),
        id: fc.oneof(fc.integer({ min: 1, max: 1000 }), fc.string({ maxLength: 8 })),
        mutations: fc.array(callMutation(m), { maxLength: 2 }),
      }),
    )
    const oneCall = call.map(({ method, params, id, mutations }) => {
      let c: Record<string, unknown> = { jsonrpc: '2.0', method, params, id }
      for (const m of mutations) c = m(c)
      return { value: c as unknown, names: mutations.map(String) }
    })
    const bodyArb = fc.oneof(
      { arbitrary: oneCall, weight: 6 },
      {
        arbitrary: fc.array(oneCall, { minLength: 1, maxLength: 25 }).map((calls) => ({
          value: calls.map((c) => c.value) as unknown,
          names: [`batch of ${calls.length}`, ...calls.flatMap((c) => c.names)],
        })),
        weight: 2,
      },
      {
        arbitrary: fc
          .constantFrom<unknown>(
            [],
            [1, 2, 3],
            [[]],
            [null],
            {},
            null,
            'x',
            1,
            [{ jsonrpc: '2.0' }],
            [[{ jsonrpc: '2.0', method: 'quota.get', id: 1 }]],
          )
          .map((v) => ({ value: v, names: ['odd body'] })),
        weight: 1,
      },
    )
    return fc
      .record({
        body: bodyArb,
        prefix,
        headers: creds.headers(
          { id: 'rpc', method: 'POST', path: '/rpc', pathParams: [], queryParams: [], security: ['apiKey'] },
          auth,
        ),
        head: fc.array(headMutations(CREDENTIAL_HEADERS['dns-manager']), { maxLength: 2 }),
        deep: fc.option(deepMember, { freq: 8 }),
        from: sourceAddress,
      })
      .map(({ body, prefix: p, headers, head, deep, from }) => {
        let draft: Draft = {
          method: 'POST',
          path: `${p}/rpc`,
          query: [],
          headers: [...headers, ['Content-Type', 'application/json']],
          body: { json: body.value },
        }
        if (deep) draft = deep.apply(draft)
        for (const m of head) draft = m.apply(draft)
        const names = body.names.map((n) => mutation(n, (d) => d))
        return {
          service: 'dns-manager' as const,
          operation: 'POST /rpc',
          auth,
          mutations: [...names, ...(deep ? [deep] : []), ...head],
          draft,
          from,
        }
      })
  })
}

type CallMutation = ((c: Record<string, unknown>) => Record<string, unknown>) & { toString(): string }
const named = (name: string, f: (c: Record<string, unknown>) => Record<string, unknown>): CallMutation =>
  Object.assign(f, { toString: () => name })

function callMutation(m: RpcMethod): fc.Arbitrary<CallMutation> {
  const fields = Object.entries(m.params.properties ?? {})
  const field = fields.length ? fc.constantFrom(...fields) : fc.constant<[string, JsonSchema]>(['x', {}])
  return fc.oneof(
    field
      .chain(([name, schema]) => fc.tuple(fc.constant(name), fc.oneof(wrongValue(schema), nastyString)))
      .map(([name, v]) =>
        named(`params.${name} = ${short(JSON.stringify(v))}`, (c) => ({
          ...c,
          params: { ...(c.params as object), [name]: v },
        })),
      ),
    field.map(([name]) =>
      named(`no params.${name}`, (c) => {
        const params = { ...(c.params as Record<string, unknown>) }
        delete params[name]
        return { ...c, params }
      }),
    ),
    fc
      .constantFrom<unknown>([], [1, 'a'], 'params', 1, null, true)
      .map((v) => named(`params = ${JSON.stringify(v)}`, (c) => ({ ...c, params: v }))),
    fc
      .constantFrom<unknown>(
        'no.such',
        '',
        'rpc.discover',
        '__proto__',
        'constructor',
        'toString',
        'hasOwnProperty',
        1,
        null,
        ['quota.get'],
        'QUOTA.GET',
        ' quota.get',
      )
      .map((v) => named(`method = ${JSON.stringify(v)}`, (c) => ({ ...c, method: v }))),
    fc
      .constantFrom<unknown>(
        null,
        1.5,
        -1,
        2 ** 60,
        {},
        [],
        true,
        'x'.repeat(5000),
        '\u0000',
        '\ud800',
        Infinity,
      )
      .map((v) => named(`id = ${short(JSON.stringify(v))}`, (c) => ({ ...c, id: v }))),
    fc.constant(
      named('notification (no id)', (c) => {
        const { id: _id, ...rest } = c
        return rest
      }),
    ),
    fc
      .constantFrom<unknown>('1.0', 2, 2.0, null, undefined, '2.0 ')
      .map((v) => named(`jsonrpc = ${JSON.stringify(v)}`, (c) => ({ ...c, jsonrpc: v }))),
    fc
      .tuple(fc.oneof(nastyString, fc.constant('__proto__')), anyJson)
      .map(([k, v]) => named(`extra member ${short(k)}`, (c) => ({ ...c, [k]: v }))),
  )
}
