import { ApolloClient, CombinedGraphQLErrors, gql, HttpLink, InMemoryCache } from '@apollo/client'
import {
  buildClientSchema,
  buildSchema,
  getIntrospectionQuery,
  type IntrospectionQuery,
  lexicographicSortSchema,
  printSchema,
} from 'graphql'
import { ClientError, GraphQLClient } from 'graphql-request'
import { buildApp, createAccount, type TestAccount, useDeps } from '../helpers.ts'
import { listenOnLoopback } from '../support/programs.ts'

/**
 * Stock GraphQL clients, unmodified, against the service on a loopback port (issue 43): Apollo
 * Client 4 (HttpLink: `Accept: application/graphql-response+json,application/json;q=0.9`) and
 * graphql-request 7 (`Accept: application/graphql-response+json, application/json`). Errors
 * must reach them as GraphQL errors (codes read from their error objects, not from a body
 * string), partial answers as data plus errors, and the schema through introspection must be
 * the one published at /graphql/schema.graphql.
 */
const deps = useDeps()

const PARTIAL = `{
  quota { quota { used total available } balance_cents }
  subdomain(id: 999999999) { subdomain { id full_domain } }
}`

interface GraphQLErrorShape {
  message: string
  path?: ReadonlyArray<string | number>
  extensions?: Record<string, unknown>
}

describe('stock GraphQL clients read our answers', () => {
  let server: { port: number; close: () => Promise<void> }
  let account: TestAccount
  let url: string
  beforeAll(async () => {
    server = await listenOnLoopback(buildApp(deps).app)
    url = `http://127.0.0.1:${server.port}/graphql`
    account = await createAccount(deps, { quota: 3 })
  })
  afterAll(() => server.close())

  const apollo = (headers: Record<string, string>) =>
    new ApolloClient({ link: new HttpLink({ uri: url, headers }), cache: new InMemoryCache() })

  describe('Apollo Client 4', () => {
    it('when a query is answered in part, then errorPolicy "all" gives the data and the error with its code', async () => {
      const result = await apollo(account.headers).query({
        query: gql(PARTIAL),
        errorPolicy: 'all',
        fetchPolicy: 'no-cache',
      })
      expect(result.data).toMatchObject({
        quota: { quota: { used: 0, total: 3, available: 3 }, balance_cents: 0 },
        subdomain: null,
      })
      expect(CombinedGraphQLErrors.is(result.error)).toBe(true)
      const errors = (result.error as CombinedGraphQLErrors).errors as readonly GraphQLErrorShape[]
      expect(errors).toHaveLength(1)
      expect(errors[0]).toMatchObject({
        path: ['subdomain'],
        extensions: { code: 'subdomain_not_found', request_id: expect.any(String) },
      })
    })

    it('when the credentials are wrong, then the query rejects with a GraphQL error auth_invalid_credentials, not a ServerError', async () => {
      const wrong = { 'X-API-Key': account.apiKey, 'X-API-Secret': '0'.repeat(64) }
      const error = await apollo(wrong)
        .query({ query: gql('{ quota { balance_cents } }'), fetchPolicy: 'no-cache' })
        .then(
          () => null,
          (err: unknown) => err,
        )
      expect(CombinedGraphQLErrors.is(error)).toBe(true)
      expect((error as CombinedGraphQLErrors).errors[0]!.extensions).toMatchObject({
        code: 'auth_invalid_credentials',
      })
    })

    it('when a document does not validate, then the error is a GraphQL error bad_request', async () => {
      const result = await apollo(account.headers).query({
        query: gql('{ quota { no_such_field } }'),
        errorPolicy: 'all',
        fetchPolicy: 'no-cache',
      })
      expect(CombinedGraphQLErrors.is(result.error)).toBe(true)
      expect((result.error as CombinedGraphQLErrors).errors[0]!.extensions?.code).toBe('bad_request')
    })
  })

  describe('graphql-request 7', () => {
    it('when a query is answered in part, then errorPolicy "all" returns data and errors (no ClientError), status 200', async () => {
      const client = new GraphQLClient(url, { headers: account.headers, errorPolicy: 'all' })
      const res = await client.rawRequest<{ quota: unknown; subdomain: unknown }>(PARTIAL)
      expect(res.status).toBe(200)
      expect(res.headers.get('content-type')).toMatch(/^application\/graphql-response\+json/)
      expect(res.data).toMatchObject({ quota: { balance_cents: 0 }, subdomain: null })
      expect(res.errors).toHaveLength(1)
      expect(res.errors![0]).toMatchObject({
        path: ['subdomain'],
        extensions: { code: 'subdomain_not_found', request_id: expect.any(String) },
      })
    })

    it('when the credentials are wrong, then the ClientError carries the GraphQL error and its code (HTTP 401)', async () => {
      const client = new GraphQLClient(url, {
        headers: { 'X-API-Key': account.apiKey, 'X-API-Secret': '0'.repeat(64) },
      })
      const error = await client.request('{ quota { balance_cents } }').then(
        () => null,
        (err: unknown) => err,
      )
      expect(error).toBeInstanceOf(ClientError)
      const { response } = error as ClientError
      expect(response.status).toBe(401)
      expect(response.errors?.[0]?.extensions).toMatchObject({
        code: 'auth_invalid_credentials',
        request_id: expect.any(String),
      })
    })

    it('when root fields pass the rate limit, then the data in front, rate_limit_exceeded past it with details.reset_at, and Retry-After', async () => {
      const limited = await listenOnLoopback(buildApp(deps, { env: { RATE_LIMIT_PER_MINUTE: '2' } }).app)
      try {
        const a = await createAccount(deps)
        const client = new GraphQLClient(`http://127.0.0.1:${limited.port}/graphql`, {
          headers: a.headers,
          errorPolicy: 'all',
        })
        const res = await client.rawRequest<Record<string, unknown>>(
          '{ a: quota { balance_cents } b: quota { balance_cents } c: quota { balance_cents } }',
        )
        expect(res.status).toBe(200)
        expect(res.data).toEqual({ a: { balance_cents: 0 }, b: { balance_cents: 0 }, c: null })
        expect(res.errors).toEqual([
          expect.objectContaining({
            path: ['c'],
            extensions: expect.objectContaining({
              code: 'rate_limit_exceeded',
              details: expect.objectContaining({ reset_at: expect.any(String) }),
            }),
          }),
        ])
        expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0)
      } finally {
        await limited.close()
      }
    })

    it('when a document fails to parse, then the ClientError carries bad_request (HTTP 400 in this media type)', async () => {
      const client = new GraphQLClient(url, { headers: account.headers, errorPolicy: 'all' })
      const error = await client.rawRequest('{ quota { ').then(
        () => null,
        (err: unknown) => err,
      )
      expect(error).toBeInstanceOf(ClientError)
      expect((error as ClientError).response.status).toBe(400)
      expect((error as ClientError).response.errors?.[0]?.extensions?.code).toBe('bad_request')
    })
  })

  describe('application/json, for clients that ask only for it', () => {
    const post = (query: string, headers: Record<string, string> = account.headers) =>
      fetch(url, {
        method: 'POST',
        headers: { ...headers, 'Content-Type': 'application/json', Accept: 'application/json' },
        body: JSON.stringify({ query }),
      })

    it('when a well-formed request fails to parse, validate or run a field, then 200 with the errors', async () => {
      for (const query of ['{ quota { ', '{ quota { no_such_field } }', PARTIAL]) {
        const res = await post(query)
        expect([query, res.status]).toEqual([query, 200])
        expect(res.headers.get('content-type')).toMatch(/^application\/json/)
        const body = (await res.json()) as { errors: GraphQLErrorShape[] }
        expect(body.errors[0]!.extensions?.code).toEqual(
          expect.stringMatching(/^(bad_request|subdomain_not_found)$/),
        )
      }
    })

    it('when the credentials are wrong, then 401 with the error in the GraphQL shape (refused before GraphQL runs)', async () => {
      const res = await post('{ quota { balance_cents } }', {
        'X-API-Key': account.apiKey,
        'X-API-Secret': 'x',
      })
      expect(res.status).toBe(401)
      const body = (await res.json()) as { errors: GraphQLErrorShape[] }
      expect(body.errors[0]!.extensions?.code).toBe('auth_invalid_credentials')
    })
  })

  describe('the schema', () => {
    it('when the standard introspection query is sent, then the schema it gives is the SDL published at /graphql/schema.graphql', async () => {
      const client = new GraphQLClient(url, { headers: account.headers })
      const introspection = await client.request<IntrospectionQuery>(
        getIntrospectionQuery({ descriptions: true, specifiedByUrl: true, directiveIsRepeatable: true }),
      )
      const published = await fetch(`${url}/schema.graphql`)
      expect(published.status).toBe(200)
      const sdl = await published.text()
      expect(sdl).toContain('type Query')
      const live = printSchema(lexicographicSortSchema(buildClientSchema(introspection)))
      expect(live).toBe(printSchema(lexicographicSortSchema(buildSchema(sdl))))
      // The same at /api/v1.
      const v1 = await fetch(`http://127.0.0.1:${server.port}/api/v1/graphql/schema.graphql`)
      expect(await v1.text()).toBe(sdl)
    })

    it('when introspection nests types in types, then it is refused before it runs', async () => {
      const client = new GraphQLClient(url, { headers: account.headers })
      const error = await client
        .request('{ __schema { types { fields { type { fields { type { fields { name } } } } } } } }')
        .then(
          () => null,
          (err: unknown) => err,
        )
      expect(error).toBeInstanceOf(ClientError)
      expect((error as ClientError).response.status).toBe(400)
      expect((error as ClientError).response.errors?.[0]?.extensions?.code).toBe('bad_request')
    })

    it('when an anonymous caller sends the introspection query, then 401: introspection is for account holders', async () => {
      const error = await new GraphQLClient(url).request(getIntrospectionQuery()).then(
        () => null,
        (err: unknown) => err,
      )
      expect((error as ClientError).response.status).toBe(401)
      expect((error as ClientError).response.errors?.[0]?.extensions?.code).toBe('auth_invalid_credentials')
    })
  })
})
