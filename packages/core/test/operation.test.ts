import { Router } from 'express'
import { z } from 'zod'
import { ApiError } from '../src/errors.ts'
import { createHttpApp } from '../src/http.ts'
import {
  defineAuth,
  type InputOf,
  operationsOver,
  type OutputOf,
  parseCallArguments,
  reply,
  resolveWith,
} from '../src/operation.ts'
import { readReply, requestOf } from '../src/operation-client.ts'
import { answerHotRepresentation, hotRoutesOf, mountOperations } from '../src/operation-express.ts'
import { operationsDocument } from '../src/operation-openapi.ts'
import { request, silentLogger } from '../src/testing.ts'
import {
  expectDocumentedError,
  hotReadAnswers,
  operationsWithoutRoute,
  routesWithoutOperation,
} from '../src/testing-operations.ts'

// An app of two operations over an in-memory list, the shape every Quartet app's http/ takes.
interface Deps {
  items: Map<number, { id: number; name: string }>
}
const { define } = operationsOver<Deps>()

const signedIn = defineAuth<{ user: string }>({
  name: 'signedIn',
  security: ['bearer'],
  errors: { unauthorized: 'no bearer token' },
})

const ZItem = z.strictObject({ id: z.number().int(), name: z.string() })

const getItem = define({
  name: 'getItem',
  summary: 'One item',
  route: { method: 'get', path: '/items/:id' },
  input: {
    params: z.strictObject({ id: z.string().regex(/^\d+$/).transform(Number) }),
    query: z.strictObject({ upper: z.enum(['true', 'false']).optional() }),
  },
  responses: { 200: { description: 'the item', schema: z.strictObject({ data: ZItem }) } },
  auth: signedIn,
  errors: { not_found: 'no such item' },
  headers: { 'Cache-Control': 'no-store' },
  hot: { dependsOn: 'the items map, read on each request', invalidatedBy: 'nothing: nothing is kept' },
  async handler({ params, query }, { deps, headers, req }) {
    // Which way the request came: express's request knows its app, node's does not.
    headers.setHeader('X-Served-By', 'app' in req ? 'express' : 'hot')
    const item = deps.items.get(params.id)
    if (!item) throw new ApiError('not_found', `no item ${params.id}`)
    return reply(200, { data: query.upper === 'true' ? { ...item, name: item.name.toUpperCase() } : item })
  },
})

const createItem = define({
  name: 'createItem',
  summary: 'Add an item',
  route: { method: 'post', path: '/items' },
  also: [{ method: 'put', path: '/items' }],
  input: { body: z.strictObject({ name: z.string().min(1) }) },
  responses: {
    201: { description: 'created', schema: z.strictObject({ data: ZItem, by: z.string() }) },
    200: { description: 'an item of that name existed', schema: z.strictObject({ data: ZItem }) },
  },
  auth: signedIn,
  errors: { conflict: 'never, in this test', rate_limit_exceeded: 'too many' },
  async handler({ body }, { deps, caller }) {
    const existing = [...deps.items.values()].find((i) => i.name === body.name)
    if (existing) return reply(200, { data: existing })
    const item = { id: deps.items.size + 1, name: body.name }
    deps.items.set(item.id, item)
    return reply(201, { data: item, by: caller.user })
  },
})

const operations = [getItem, createItem]

function buildApp() {
  const deps: Deps = { items: new Map([[1, { id: 1, name: 'one' }]]) }
  const auth = [
    resolveWith(signedIn, (req, headers) => {
      headers.setHeader('X-Seen-By', 'auth')
      const header = req.headers.authorization
      if (!header?.startsWith('Bearer ')) throw new ApiError('unauthorized', 'missing bearer token')
      return { user: header.slice(7) }
    }),
  ]
  const { app } = createHttpApp(
    {
      name: 'operation-test',
      logger: silentLogger(),
      envelope: 'code',
      trustProxy: ['loopback'],
      hotRoutes: hotRoutesOf(operations, { deps, auth }),
    },
    (app) => mountOperations(app, operations, { deps, auth }),
  )
  return app
}

describe('operations served by express', () => {
  it('when a request is valid, then the handler answers with its declared status, the operation headers and the auth headers', async () => {
    const app = buildApp()
    const res = await request(app)
      .post('/items')
      .set('Authorization', 'Bearer ann')
      .send({ name: 'two' })
      .expect(201)
    expect(res.body).toEqual({ data: { id: 2, name: 'two' }, by: 'ann' })
    expect(res.headers['x-seen-by']).toBe('auth')
    const again = await request(app)
      .put('/items')
      .set('Authorization', 'Bearer ann')
      .send({ name: 'two' })
      .expect(200)
    expect(again.body).toEqual({ data: { id: 2, name: 'two' } })
  })

  it('when auth refuses, then the input is not looked at and the envelope carries the auth error', async () => {
    const res = await request(buildApp()).post('/items').send({ wrong: true }).expect(401)
    expect(res.body.error.code).toBe('unauthorized')
  })

  it('when the input is invalid, then 400 names the fields in the envelope, and the operation headers are set', async () => {
    const res = await request(buildApp())
      .get('/items/x?upper=maybe')
      .set('Authorization', 'Bearer ann')
      .expect(400)
    expect(res.body.error.code).toBe('bad_request')
    expect(res.body.error.details.issues.map((i: { field: string }) => i.field)).toEqual([
      'params.id',
      'query.upper',
    ])
    expect(res.headers['cache-control']).toBe('no-store')
  })

  it('when the hot route and express both answer the same read, then status, body and headers agree', async () => {
    const app = buildApp()
    const hot = await request(app).get('/items/1').set('Authorization', 'Bearer ann').expect(200)
    // A query string sends the same read through express.
    const viaExpress = await request(app)
      .get('/items/1?upper=false')
      .set('Authorization', 'Bearer ann')
      .expect(200)
    expect([hot.headers['x-served-by'], viaExpress.headers['x-served-by']]).toEqual(['hot', 'express'])
    expect(viaExpress.body).toEqual(hot.body)
    for (const name of ['cache-control', 'x-seen-by', 'content-type'])
      expect(viaExpress.headers[name]).toBe(hot.headers[name])
    const missing = await request(app).get('/items/9').set('Authorization', 'Bearer ann').expect(404)
    const missingViaExpress = await request(app)
      .get('/items/9?upper=true')
      .set('Authorization', 'Bearer ann')
      .expect(404)
    expect(missing.body.error.message).toBe(missingViaExpress.body.error.message)
  })

  it('when every hot read is sent both ways (hotReadAnswers), then the answers agree, and a read without an example or one left to express fails the check', async () => {
    const app = buildApp()
    const bearer = { Authorization: 'Bearer ann' }
    const answers = await hotReadAnswers(app, operations, [
      { operation: 'getItem', path: '/items/1', headers: bearer },
      { operation: 'getItem', path: '/items/9', headers: bearer },
      { operation: 'getItem', path: '/items/1' },
    ])
    expect(answers.hot.map((a) => a.status)).toEqual([200, 404, 401])
    // Only the handler's own header tells the ways apart; everything else is equal.
    expect(answers.hot[0]!.headers['x-served-by']).toBe('hot')
    const withoutWay = (list: typeof answers.hot) =>
      list.map(({ headers: { 'x-served-by': _way, ...headers }, ...rest }) => ({ ...rest, headers }))
    expect(withoutWay(answers.hot)).toEqual(withoutWay(answers.express))
    await expect(hotReadAnswers(app, operations, [])).rejects.toThrow(/without an example request: getItem/)
    await expect(
      hotReadAnswers(app, operations, [
        { operation: 'getItem', path: '/items/1?upper=true', headers: bearer },
      ]),
    ).rejects.toThrow(/was not answered before express/)
  })

  it('when an operation names an auth requirement the app does not resolve, then mounting fails', () => {
    expect(() =>
      createHttpApp({ name: 't', logger: silentLogger(), envelope: 'code', trustProxy: 1 }, (app) =>
        mountOperations(app, operations, { deps: { items: new Map() }, auth: [] }),
      ),
    ).toThrow('operation getItem needs auth "signedIn"')
  })
})

describe('the routes of an app defined by operations', () => {
  it('when every route comes from an operation, then none is reported; a route added by hand is', () => {
    const app = buildApp()
    expect(routesWithoutOperation(app, operations)).toEqual([])
    expect(operationsWithoutRoute(app, operations)).toEqual([])
    app.get('/by-hand', (_req, res) => {
      res.end()
    })
    expect(routesWithoutOperation(app, operations)).toEqual([{ method: 'get', path: '/by-hand' }])
    expect(routesWithoutOperation(app, operations, [{ method: 'get', path: '/by-hand' }])).toEqual([])
    expect(
      operationsWithoutRoute(app, [
        ...operations,
        { ...getItem, name: 'elsewhere', route: { method: 'get', path: '/nowhere' } },
      ]),
    ).toEqual(['elsewhere'])
  })

  it('when an error answer has a status the operation documents, then it passes; otherwise the check names the status', async () => {
    const app = buildApp()
    expectDocumentedError(getItem, await request(app).get('/items/9').set('Authorization', 'Bearer a'))
    expectDocumentedError(getItem, await request(app).get('/items/x').set('Authorization', 'Bearer a'))
    expectDocumentedError(getItem, await request(app).get('/items/1'))
    expect(() => expectDocumentedError(getItem, { status: 409 })).toThrow(
      'getItem answered 409, which it does not document (400, 401, 404)',
    )
  })
})

describe('an operation called without a URL (JSON-RPC params, GraphQL arguments)', () => {
  it('when given one flat object of arguments, then they are split into params, query and body and parsed', async () => {
    const input = parseCallArguments(getItem, { id: '1', upper: 'true' })
    expect(input).toEqual({ params: { id: 1 }, query: { upper: 'true' }, body: undefined })
    const deps: Deps = { items: new Map([[1, { id: 1, name: 'one' }]]) }
    const headers = new Map<string, unknown>()
    const answer = await getItem.handler(input, {
      caller: { user: 'rpc' },
      deps,
      headers: { setHeader: (name, value) => headers.set(name, value) },
      req: {} as never,
    })
    expect(answer).toEqual({ status: 200, body: { data: { id: 1, name: 'ONE' } } })
  })

  it('when an argument is wrong or unknown, then 400 names it under the name the call style gives', () => {
    expect(() => parseCallArguments(getItem, { id: 'x' }, 'params')).toThrow('params.id:')
    expect(() => parseCallArguments(createItem, { name: 'n', extra: 1 }, 'args')).toThrow(
      'args: unknown field(s): extra',
    )
    expect(parseCallArguments(createItem, { name: 'n' }).body).toEqual({ name: 'n' })
  })
})

describe('the OpenAPI document of operations', () => {
  const ZEnvelope = z.object({ error: z.object({ code: z.string(), message: z.string() }) })
  const doc = operationsDocument({ title: 't', version: '1' }, operations, { errorSchema: ZEnvelope }) as {
    paths: Record<string, Record<string, Record<string, unknown>>>
  }

  it('when generated, then each success status has its output schema and each error status the envelope', () => {
    const create = doc.paths['/items']!.post as {
      responses: Record<
        string,
        {
          description: string
          content?: Record<string, { schema: { properties: object } }>
          headers?: object
        }
      >
      security: unknown
      description: string
    }
    expect(Object.keys(create.responses).sort()).toEqual(['200', '201', '400', '401', '409', '429'])
    expect(Object.keys(create.responses['201']!.content!['application/json']!.schema.properties)).toEqual([
      'data',
      'by',
    ])
    expect(create.responses['401']!.description).toBe('no bearer token')
    expect(create.responses['429']!.headers).toHaveProperty('Retry-After')
    expect(create.security).toEqual([{ bearer: [] }])
    expect(create.description).toBe('Also served at PUT /items.')
  })

  it('when an operation takes path and query input, then both are documented as parameters', () => {
    const get = doc.paths['/items/{id}']!.get as { parameters: Array<{ name: string; in: string }> }
    expect(get.parameters.map((p) => [p.name, p.in])).toEqual([
      ['id', 'path'],
      ['upper', 'query'],
    ])
  })
})

describe('a typed client call', () => {
  it('when built from the definition, then the request and the answer are typed and checked', async () => {
    const app = buildApp()
    const input: InputOf<typeof createItem> = { body: { name: 'three' } }
    // @ts-expect-error the body's name must be a string
    const wrong: InputOf<typeof createItem> = { body: { name: 3 } }
    void wrong
    const call = requestOf(createItem, input)
    expect(call).toEqual({ method: 'POST', url: '/items', body: { name: 'three' } })
    const res = await request(app)
      .post(call.url)
      .set('Authorization', 'Bearer bo')
      .send(call.body as object)
    const created: OutputOf<typeof createItem, 201> = readReply(createItem, res.status, res.body) as OutputOf<
      typeof createItem,
      201
    >
    expect(created.by).toBe('bo')
    const read = requestOf(getItem, { params: { id: String(created.data.id) }, query: { upper: 'true' } })
    expect(read.url).toBe(`/items/${created.data.id}?upper=true`)
    const got = await request(app).get(read.url).set('Authorization', 'Bearer bo')
    expect(readReply(getItem, got.status, got.body).data.name).toBe('THREE')
    expect(() => readReply(getItem, 200, { data: { id: 'x' } })).toThrow()
    expect(() => readReply(getItem, 404, {})).toThrow('getItem answered 404')
  })
})

describe('an operation that parses its own input, with a further route documented on its own', () => {
  // One flat argument schema, as an app whose call styles share it parses: path and body merged.
  const ZRename = z.strictObject({ id: z.coerce.number().int(), name: z.string().min(1) })
  const renameItem = define({
    name: 'renameItem',
    summary: 'Rename an item',
    route: { method: 'post', path: '/items/:id/rename' },
    also: [{ method: 'patch', path: '/items/:id', operationId: 'renameItem.patch' }],
    input: { params: ZRename.pick({ id: true }), body: ZRename.omit({ id: true }) },
    inputParsedBy: 'handler',
    responses: { 200: { description: 'renamed', schema: z.strictObject({ data: ZItem }) } },
    auth: signedIn,
    errors: { not_found: 'no such item' },
    async handler(raw, { deps }) {
      const parsed = ZRename.safeParse({ ...(raw.body as object), ...raw.params })
      if (!parsed.success)
        throw new ApiError('bad_request', `in my words: ${String(parsed.error.issues[0]!.path[0])}`)
      const item = deps.items.get(parsed.data.id)
      if (!item) throw new ApiError('not_found', `no item ${parsed.data.id}`)
      item.name = parsed.data.name
      return reply(200, { data: item })
    },
  })

  function buildRenameApp() {
    const deps: Deps = { items: new Map([[1, { id: 1, name: 'one' }]]) }
    const auth = [resolveWith(signedIn, () => ({ user: 'ann' }))]
    return createHttpApp(
      { name: 'operation-test', logger: silentLogger(), envelope: 'code', trustProxy: ['loopback'] },
      (app) => mountOperations(app, [renameItem], { deps, auth }),
    ).app
  }

  it('when the input is wrong, then the handler refuses it in its own words, not the route', async () => {
    const res = await request(buildRenameApp()).patch('/items/1').send({ name: '', extra: 1 }).expect(400)
    expect(res.body.error.message).toBe('in my words: name')
    const ok = await request(buildRenameApp()).post('/items/1/rename').send({ name: 'uno' }).expect(200)
    expect(ok.body).toEqual({ data: { id: 1, name: 'uno' } })
  })

  it('when documented, then its schemas describe the request and the further route is an entry of its own', () => {
    const ZEnvelope = z.object({ error: z.object({ code: z.string(), message: z.string() }) })
    const doc = operationsDocument({ title: 't', version: '1' }, [renameItem], {
      errorSchema: ZEnvelope,
    }) as {
      paths: Record<
        string,
        Record<string, { operationId: string; description?: string; requestBody?: unknown }>
      >
    }
    expect(doc.paths['/items/{id}/rename']!.post!.operationId).toBe('renameItem')
    expect(doc.paths['/items/{id}/rename']!.post!.description).toBeUndefined()
    expect(doc.paths['/items/{id}']!.patch!.operationId).toBe('renameItem.patch')
    expect(doc.paths['/items/{id}']!.patch!.requestBody).toBeDefined()
  })

  it('when it parses its own input and is hot, then its hot route hands the handler what express would (the segments, an empty query, no body)', async () => {
    const hot = { ...renameItem, hot: { dependsOn: 'the items map', invalidatedBy: 'nothing is kept' } }
    const deps: Deps = { items: new Map([[1, { id: 1, name: 'one' }]]) }
    const auth = [resolveWith(signedIn, () => ({ user: 'ann' }))]
    const { app } = createHttpApp(
      {
        name: 'operation-test',
        logger: silentLogger(),
        envelope: 'code',
        trustProxy: ['loopback'],
        hotRoutes: hotRoutesOf([hot], { deps, auth, prefixes: ['', '/v1'] }),
      },
      (app) => {
        mountOperations(app, [hot], { deps, auth })
        const v1 = Router()
        mountOperations(v1, [hot], { deps, auth })
        app.use('/v1', v1)
      },
    )
    const answers = await hotReadAnswers(
      app,
      [hot],
      [
        { operation: 'renameItem', path: '/items/1/rename' },
        { operation: 'renameItem', path: '/v1/items/1/rename' },
      ],
    )
    expect(answers.hot.map((a) => [a.status, JSON.parse(a.body).error.message])).toEqual([
      [400, 'in my words: name'],
      [400, 'in my words: name'],
    ])
    expect(answers.hot).toEqual(answers.express)
  })

  it('when an operation takes a body the route parses, then it cannot be hot; a representation gets no hot route (its app answers it)', () => {
    const hot = { dependsOn: 'x', invalidatedBy: 'y' }
    const options = { deps: { items: new Map() }, auth: [resolveWith(signedIn, () => ({ user: 'ann' }))] }
    expect(() => hotRoutesOf([{ ...createItem, hot }], options)).toThrow(/cannot be hot: it takes a body/)
    expect(hotRoutesOf([{ ...getItem, hot, respond: () => {} }], options)).toEqual([])
    const { app } = createHttpApp(
      { name: 't', logger: silentLogger(), envelope: 'code', trustProxy: [] },
      () => {},
    )
    expect(() => answerHotRepresentation(app, getItem, () => false)).toThrow(/not a hot representation/)
  })
})
