import express from 'express'
import { request } from '../src/testing.ts'
import { z } from 'zod'
import { errorMiddleware } from '../src/errors.ts'
import { createOpenApiDocument, serveOpenApi } from '../src/openapi.ts'
import { inputOf, parseInput, validate } from '../src/validate.ts'

const ZParams = z.object({ id: z.coerce.number().int().positive() })
const ZQuery = z.object({ limit: z.coerce.number().int().min(1).max(100).default(10) })
const ZBody = z.strictObject({ name: z.string().min(1), tags: z.array(z.string()).max(3).optional() })
const schemas = { params: ZParams, query: ZQuery, body: ZBody }

function app() {
  const a = express()
  a.use(express.json())
  a.post('/items/:id', validate(schemas), (req, res) => {
    const input = inputOf(schemas, req)
    res.json({ id: input.params.id, limit: input.query.limit, name: input.body.name })
  })
  serveOpenApi(
    a,
    createOpenApiDocument({ title: 'items', version: '1.0.0' }, [
      {
        method: 'post',
        path: '/items/:id',
        operationId: 'createItem',
        summary: 'create an item',
        request: schemas,
        responses: { 200: { description: 'ok', schema: z.object({ id: z.number() }) } },
      },
    ]),
  )
  a.use(errorMiddleware({ style: 'code' }))
  return a
}

describe('validate', () => {
  it('when every part is valid, then the handler sees parsed values with defaults applied', async () => {
    const res = await request(app()).post('/items/7').send({ name: 'x' }).expect(200)
    expect(res.body).toEqual({ id: 7, limit: 10, name: 'x' })
  })

  it('when fields are wrong, unknown or missing, then 400 names each of them', async () => {
    const res = await request(app()).post('/items/-1?limit=1000').send({ extra: true }).expect(400)
    expect(res.body.error.code).toBe('bad_request')
    const fields = res.body.error.details.issues.map((i: { field: string }) => i.field)
    expect(fields).toEqual(expect.arrayContaining(['params.id', 'query.limit', 'body.name', 'body']))
    expect(res.body.error.details.issues.find((i: { field: string }) => i.field === 'body').message).toBe(
      'unknown field(s): extra',
    )
    expect(res.body.error.message).toMatch(/^params\.id: .+ \(and 3 more\)$/)
  })

  it('when a field has the wrong JSON type, then its issue names the expected and the received type, not "is required"', async () => {
    const res = await request(app())
      .post('/items/1')
      .send({ name: 5, tags: ['a', null] })
      .expect(400)
    expect(res.body.error.details.issues).toEqual([
      { field: 'body.name', message: 'expected string, received number' },
      { field: 'body.tags.1', message: 'expected string, received null' },
    ])
    expect(() => parseInput(z.object({ amount: z.number() }), { amount: '5' }, 'body')).toThrow(
      'body.amount: expected number, received string',
    )
    expect(() => parseInput(z.object({ amount: z.number() }), {}, 'body')).toThrow('body.amount: is required')
  })

  it('when there is no body at all, then the body is reported as required', async () => {
    const res = await request(app()).post('/items/1').expect(400)
    expect(res.body.error.details.issues).toEqual([{ field: 'body', message: 'is required' }])
  })
})

describe('createOpenApiDocument', () => {
  it('when built from the zod schemas, then it is OpenAPI 3.1 with path params, query and body', async () => {
    const res = await request(app()).get('/openapi.json').expect(200)
    expect(res.body.openapi).toBe('3.1.0')
    const op = res.body.paths['/items/{id}'].post
    expect(op.operationId).toBe('createItem')
    expect(op.parameters).toEqual([
      expect.objectContaining({ name: 'id', in: 'path', required: true }),
      expect.objectContaining({ name: 'limit', in: 'query', required: false }),
    ])
    expect(op.requestBody.content['application/json'].schema).toMatchObject({
      type: 'object',
      required: ['name'],
      additionalProperties: false,
    })
    expect(op.responses['200'].content['application/json'].schema.properties.id.type).toBe('number')
  })
})
