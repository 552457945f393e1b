import type { ServiceName } from '@quartet/faults/service-process'
import fc from 'fast-check'
import { type Draft, type Mutation, setHeader } from './draft.ts'
import type { Fixtures } from './fixtures.ts'
import { bodyMutations } from './mutations/body.ts'
import { headMutations } from './mutations/head.ts'
import { pathMutations, queryMutations } from './mutations/url.ts'
import type { OperationSpec } from './openapi.ts'
import { type Hints, validValue } from './schema.ts'
import { safeEncode } from './strings.ts'

/** One generated request: which operation it started from, as whom, and what was changed. */
export interface FuzzCase {
  service: ServiceName
  /** The operation (or route) it was made from. */
  operation: string
  auth: 'anonymous' | 'credentials'
  mutations: Mutation[]
  draft: Draft
  /** The loopback address it comes from: every run can be a client of its own to per-address limits. */
  from: string
}

export type Auth = FuzzCase['auth']

export const CREDENTIAL_HEADERS: Record<ServiceName, string[]> = {
  'design-archive': ['Authorization'],
  'key-info': ['Authorization'],
  'dns-manager': ['Authorization', 'X-API-Key', 'X-API-Secret'],
  'pickup-share': ['Cookie', 'Origin', 'X-Requested-With', 'X-Upload-Token'],
}

/** The service's JSON body limit (BODY_LIMIT, 1 MB by default). */
export const BODY_LIMIT = 1024 * 1024

const sourceAddress = fc
  .tuple(fc.integer({ min: 0, max: 255 }), fc.integer({ min: 1, max: 254 }))
  .map(([a, b]) => `127.0.${a}.${b}`)

/** Hints for one operation: `<operationId>.<field>` entries win over plain `<field>` ones. */
function hintsFor(op: string, hints: Hints): Hints {
  const out: Hints = {}
  for (const [name, values] of Object.entries(hints)) if (!name.includes('.')) out[name] = values
  for (const [name, values] of Object.entries(hints))
    if (name.startsWith(`${op}.`)) out[name.slice(op.length + 1)] = values
  return out
}

/** What a caller with credentials sends for an operation of a service. */
export interface Credentials {
  headers(op: OperationSpec, auth: Auth): fc.Arbitrary<Array<[string, string]>>
  hints(auth: Auth): Hints
  /** Raw-body operations (uploads): the body a client sends. */
  rawBody?(op: OperationSpec, auth: Auth): fc.Arbitrary<Buffer> | undefined
}

export function credentialsOf(service: ServiceName, fixtures: Fixtures): Credentials {
  const none = fc.constant<Array<[string, string]>>([])
  switch (service) {
    case 'design-archive':
      return { headers: () => none, hints: () => ({}) }
    case 'key-info': {
      const k = fixtures.keyInfo
      return {
        headers: (op, auth) =>
          auth === 'anonymous'
            ? none
            : op.path === '/api/v1/key'
              ? fc.constantFrom<Array<[string, string]>>(
                  [['Authorization', `Bearer ${k.subject}`]],
                  [['Authorization', `Bearer ${k.admin}`]],
                )
              : fc.constant([['Authorization', `Bearer ${k.admin}`]]),
        hints: () => k.hints,
      }
    }
    case 'dns-manager': {
      const d = fixtures.dns
      return {
        headers: (_op, auth) =>
          auth === 'anonymous'
            ? none
            : fc.constantFrom<Array<[string, string]>>(
                [
                  ['X-API-Key', d.apiKey],
                  ['X-API-Secret', d.apiSecret],
                ],
                [['Authorization', `Bearer ${d.apiKey}:${d.apiSecret}`]],
              ),
        hints: () => d.hints,
      }
    }
    case 'pickup-share': {
      const p = fixtures.pickup
      const admin = (cookie: string): Array<[string, string]> => [
        ['Cookie', cookie],
        ['Origin', p.url],
        ['X-Requested-With', 'fuzz'],
      ]
      return {
        headers: (op, auth) => {
          if (auth === 'anonymous') return none
          // Logging out ends a session: only spare ones are given to it.
          if (op.id === 'adminLogout') return fc.constantFrom(...p.spareSessions).map(admin)
          if (op.id === 'blobUpload' || op.id === 'repoUpload')
            return fc
              .constantFrom(...p.uploadTokens)
              .map((t): Array<[string, string]> => [['X-Upload-Token', t.token]])
          if (op.path.startsWith('/api/admin')) return fc.constant(admin(p.session))
          return none
        },
        hints: (auth) => (auth === 'anonymous' ? p.anonymousHints : p.hints),
        rawBody: (op) =>
          op.id === 'blobUpload' || op.id === 'repoUpload'
            ? fc.oneof(
                fc.uint8Array({ minLength: 16, maxLength: 16 }).map((a) => Buffer.from(a)),
                fc.uint8Array({ maxLength: 64 }).map((a) => Buffer.from(a)),
                fc.integer({ min: 256 * 1024, max: 3 * 1024 * 1024 }).map((n) => Buffer.alloc(n, 7)),
              )
            : undefined,
      }
    }
  }
}

/** Requests made from one operation of the OpenAPI document, valid at first, then mutated. */
export function restCases(
  service: ServiceName,
  op: OperationSpec,
  creds: Credentials,
): fc.Arbitrary<FuzzCase> {
  const authModes: Auth[] = ['anonymous', 'credentials']
  return fc.constantFrom(...authModes).chain((auth) => {
    const hints = hintsFor(op.id, creds.hints(auth))
    const pathValues = fc.tuple(...op.pathParams.map((p) => validValue(p.schema, hints, p.name)))
    const queryModel: Record<string, fc.Arbitrary<unknown>> = {}
    for (const q of op.queryParams) queryModel[q.name] = validValue(q.schema, hints, q.name)
    const query = fc.record(queryModel, {
      requiredKeys: op.queryParams.filter((q) => q.required).map((q) => q.name),
    })
    const raw = creds.rawBody?.(op, auth)
    const body: fc.Arbitrary<Draft['body']> = raw
      ? raw.map((b) => ({ raw: b, note: 'upload bytes' }))
      : op.body
        ? validValue(op.body, hints).map((json) => ({ json }))
        : fc.constant(undefined)
    const mutationArbs = [
      { arbitrary: headMutations(CREDENTIAL_HEADERS[service]), weight: 3 },
      { arbitrary: queryMutations(op.queryParams), weight: op.queryParams.length ? 2 : 1 },
      { arbitrary: bodyMutations(op.body, BODY_LIMIT), weight: op.body || raw ? 4 : 1 },
    ]
    const path = pathMutations(op.path, op.pathParams)
    if (path) mutationArbs.push({ arbitrary: path, weight: 2 })
    return fc
      .record({
        pathValues,
        query,
        body,
        headers: creds.headers(op, auth),
        mutations: fc.array(fc.oneof(...mutationArbs), { maxLength: 3 }),
        from: sourceAddress,
      })
      .map(({ pathValues: values, query: q, body: b, headers, mutations, from }) => {
        let path = op.path
        op.pathParams.forEach((p, i) => {
          path = path.replace(`{${p.name}}`, safeEncode(String(values[i])))
        })
        let draft: Draft = {
          method: op.method,
          path,
          query: Object.entries(q).map(([k, v]): [string, string] => [k, safeEncode(String(v))]),
          headers: [...headers],
          ...(b ? { body: b } : {}),
        }
        if (b && 'json' in b) draft = setHeader(draft, 'Content-Type', 'application/json')
        if (b && 'raw' in b) draft = setHeader(draft, 'Content-Type', 'application/octet-stream')
        for (const m of mutations) draft = m.apply(draft)
        return { service, operation: op.id, auth, mutations, draft, from }
      })
  })
}

/** Routes outside the OpenAPI document: health, metrics, the document itself, pages, unknown paths. */
export function extraRoutes(service: ServiceName): string[] {
  const common = ['/healthz', '/readyz', '/metrics', '/openapi.json', '/', '/favicon.ico', '/no/such/route']
  switch (service) {
    case 'design-archive':
      return [...common, '/design-api/v1/', '/design-api/v1', '/design-api/v2/manifest.json']
    case 'key-info':
      return [...common, '/api/v1/', '/api/v1/keys/']
    case 'dns-manager':
      return [
        ...common,
        '/rest',
        '/api/v1/rest/quota',
        '/api/v1/rest/subdomains',
        '/rest/nothing',
        '/api/v1/',
      ]
    case 'pickup-share':
      return [
        ...common,
        '/pickup',
        '/admin',
        '/assets/index.js',
        '/assets/none.css',
        '/favicon.svg',
        '/api/admin',
      ]
  }
}

export function extraCases(service: ServiceName, creds: Credentials): fc.Arbitrary<FuzzCase> {
  const plain: OperationSpec = {
    id: '',
    method: 'GET',
    path: '',
    pathParams: [],
    queryParams: [],
    security: [],
  }
  return fc
    .constantFrom(...extraRoutes(service))
    .chain((path) => restCases(service, { ...plain, id: `GET ${path}`, path }, creds))
}
