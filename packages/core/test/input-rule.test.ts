import type supertest from 'supertest'
import { request } from '../src/testing.ts'
import { z } from 'zod'
import { ApiError } from '../src/errors.ts'
import { createHttpApp } from '../src/http.ts'
import { silentLogger } from '../src/testing.ts'
import {
  findMalformedString,
  jsonNestsDeeperThan,
  MAX_JSON_DEPTH,
  parseInput,
  validate,
} from '../src/validate.ts'

/** An app with one echo route that takes anything, validated or not: the rule must hold for both. */
function buildApp() {
  return createHttpApp(
    { name: 'input-rule', logger: silentLogger(), envelope: 'code', trustProxy: ['loopback'] },
    (app) => {
      app.post('/raw/:id', (req, res) => {
        res.json({ id: req.params.id, query: req.query, body: req.body })
      })
      app.get('/raw', (req, res) => {
        res.json({ query: req.query })
      })
      app.post('/validated', validate({ body: z.object({ name: z.string() }) }), (req, res) => {
        res.json(req.body)
      })
    },
  ).app
}

const issuesOf = (res: supertest.Response) => res.body.error.details.issues as Array<{ field: string }>

describe('the input rule: no NUL, no lone surrogate, no malformed encoding, anywhere', () => {
  it('when a JSON body string holds a NUL, then 400 bad_request names its field, even on a route without validation', async () => {
    const res = await request(buildApp())
      .post('/raw/1')
      .set('Content-Type', 'application/json')
      .send('{"events":[{"id":"ok"},{"id":"a\\u0000b"}]}')
      .expect(400)
    expect(res.body.error.code).toBe('bad_request')
    expect(issuesOf(res)).toEqual([{ field: 'body.events.1.id', message: 'must not contain NUL characters' }])
  })

  it('when a JSON body holds a lone surrogate, in a value or a field name, then 400 names it', async () => {
    const app = buildApp()
    const value = await request(app)
      .post('/raw/1')
      .set('Content-Type', 'application/json')
      .send('{"name":"x\\ud800"}')
      .expect(400)
    expect(issuesOf(value)[0]!.field).toBe('body.name')
    const key = await request(app)
      .post('/raw/1')
      .set('Content-Type', 'application/json')
      .send('{"\\udc00":1}')
      .expect(400)
    expect(key.body.error.message).toMatch(/field name must be well-formed Unicode/)
  })

  it('when the body bytes are not UTF-8, then 400 rather than replacement characters', async () => {
    const res = await request(buildApp())
      .post('/raw/1')
      .set('Content-Type', 'application/json')
      .serialize((bytes: Buffer) => bytes as unknown as string) // as sent, not JSON of a Buffer
      .send(Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d])) // {"a":"\xff\xfe"}
      .expect(400)
    expect(res.body.error).toMatchObject({ code: 'bad_request', message: 'request body is not valid UTF-8' })
  })

  it('when the query holds %00, bytes that are not UTF-8, or a broken escape, then 400 names the parameter', async () => {
    const app = buildApp()
    const nul = await request(app).get('/raw?search=a%00b').expect(400)
    expect(issuesOf(nul)[0]).toEqual({ field: 'query.search', message: 'must not contain NUL characters' })
    const latin1 = await request(app).get('/raw?q=caf%E9').expect(400)
    expect(issuesOf(latin1)[0]!.field).toBe('query.q')
    const broken = await request(app).get('/raw?q=%zz').expect(400)
    expect(broken.body.error.message).toBe('query.q: malformed percent-encoding or not UTF-8')
  })

  it('when a path parameter holds %00, then 400 before the route reads it', async () => {
    const res = await request(buildApp()).post('/raw/a%00b').send({}).expect(400)
    expect(issuesOf(res)[0]!.field).toBe('path')
  })

  it('when input is well-formed (emoji, CJK, escapes, a plus sign), then it passes unchanged', async () => {
    const res = await request(buildApp())
      .post('/raw/caf%C3%A9?q=%F0%9F%98%80+%E4%B8%AD&plain=a+b')
      .send({ name: 'café 😀 中文', nested: [{ deep: 'ok\t' }] })
      .expect(200)
    expect(res.body).toEqual({
      id: 'café',
      query: { q: '😀 中', plain: 'a b' },
      body: { name: 'café 😀 中文', nested: [{ deep: 'ok\t' }] },
    })
  })

  it('when a value is nested deeper than any stack, then the check still answers', () => {
    let deep: unknown = 'a\u0000'
    for (let i = 0; i < 100_000; i++) deep = [deep]
    expect(findMalformedString(deep, 'body')?.message).toBe('must not contain NUL characters')
  })

  it('when parseInput (JSON-RPC params, GraphQL variables) gets a malformed string, then it throws 400 before the schema runs', () => {
    const schema = z.object({ content: z.string() })
    let thrown: unknown
    try {
      parseInput(schema, { content: 'x\u0000' }, 'params')
    } catch (err) {
      thrown = err
    }
    expect(thrown).toBeInstanceOf(ApiError)
    expect(thrown).toMatchObject({
      code: 'bad_request',
      message: 'params.content: must not contain NUL characters',
    })
  })

  it('when the validate middleware gets a malformed string in the body, then it reports it as a validation issue', async () => {
    const res = await request(buildApp())
      .post('/validated')
      .set('Content-Type', 'application/json')
      .send('{"name":"\\u0000"}')
      .expect(400)
    expect(issuesOf(res)[0]!.field).toBe('body.name')
  })
})

describe('jsonNestsDeeperThan', () => {
  it.each([
    ['[]', 1, false],
    ['[[]]', 1, true],
    ['{"a":{"b":[1]}}', 3, false],
    ['{"a":{"b":[1]}}', 2, true],
    ['["[[[[", "\\"[[["]', 1, false],
    ['"\\\\"[[', 1, true],
  ])('when the text is %s and the limit %d, then deeper is %s', (text, max, deeper) => {
    expect(jsonNestsDeeperThan(text, max)).toBe(deeper)
    expect(jsonNestsDeeperThan(Buffer.from(text), max)).toBe(deeper)
  })

  it('when a 20 KB body nests 10,000 deep, then it is found without recursion, and 64 levels are allowed', () => {
    expect(jsonNestsDeeperThan('['.repeat(10_000) + ']'.repeat(10_000))).toBe(true)
    expect(jsonNestsDeeperThan('['.repeat(MAX_JSON_DEPTH) + ']'.repeat(MAX_JSON_DEPTH))).toBe(false)
  })
})
