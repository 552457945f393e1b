import { ApiError } from '@quartet/core/errors'
import type { ErrorDocs } from '@quartet/core/operation'
import { setRateLimitHeaders } from '@quartet/core/rate-limit'
import type { Response } from 'express'
import { z } from 'zod'
import type { DnsOperation } from '../define.ts'
import { dnsOperations, operationsByName } from '../operations.ts'
import { accountSession } from './auth.ts'
import { ZOperationName } from './contracts.ts'
import { backOffice, CSRF_ERRORS, defineRepresentation } from './deps.ts'

/**
 * The API's operations from the pages: `POST /account/api/op/<JSON-RPC name>` with the session as
 * the principal runs the operation through the pipeline REST runs (pipeline.ts: its rate limit,
 * its argument schema, the use case, the audit entry of a write), and answers as REST does: the
 * operation's status with `{ success: true, … }`, or a raw operation's text (subdomains.zone's
 * zone file). The body is the operation's arguments, parsed by the pipeline, not here.
 */

/** An operation's REST answer at `status`: each JSON operation's documented success schema (define.ts). */
function restAnswersAt(status: 200 | 201): z.ZodType {
  const schemas = dnsOperations
    .filter((op) => op.status === status && !op.raw)
    .map((op) => (op.responses as Record<number, { schema: z.ZodType }>)[status]!.schema)
  return z.union(schemas as [z.ZodType, z.ZodType, ...z.ZodType[]])
}

/** What the API's operations refuse with (each as its REST route answers it), beside this route's own. */
const OPERATION_ERRORS: ErrorDocs = Object.fromEntries(
  dnsOperations
    .flatMap((op) => Object.keys(op.errors))
    .map((code) => [code, 'the operation refused, as over REST']),
)

const RAW = dnsOperations
  .filter((op) => op.raw)
  .map((op) => op.name)
  .join(', ')

export const pageOperation = defineRepresentation({
  ...backOffice,
  auth: accountSession,
  name: 'pageOperation',
  summary:
    'Any operation of the API (its JSON-RPC method name, e.g. subdomains.create) with the session as the principal: the same input, rules, answer and audit as REST',
  route: { method: 'post', path: '/account/api/op/:name' },
  input: { params: ZOperationName },
  responses: {
    200: {
      description: `\`{success:true, …}\` as REST answers (${RAW}: the operation's text, as REST answers it)`,
      schema: restAnswersAt(200),
    },
    201: {
      description: '`{success:true, …}` as REST answers (an operation that creates)',
      schema: restAnswersAt(201),
    },
  },
  errors: {
    ...OPERATION_ERRORS,
    ...CSRF_ERRORS,
    not_found: 'no such operation',
    bad_request: 'a body that is not a JSON object, or the operation’s arguments refused by its schema',
    rate_limit_exceeded: 'the account’s rate limit (details.reset_at)',
  },
  async handler({ params, body }, { caller, deps, headers }) {
    const op = operationsByName.get(params.name)
    if (!op) throw new ApiError('not_found', `no operation ${params.name}`)
    setRateLimitHeaders(headers, await deps.pipeline.spend(caller))
    if (body !== undefined && (typeof body !== 'object' || body === null || Array.isArray(body)))
      throw new ApiError('bad_request', 'the JSON body must be an object')
    return { op, output: await deps.pipeline.run(op, caller, body ?? {}) }
  },
  respond({ op, output }: { op: DnsOperation; output: unknown }, _req, res) {
    // Express's response (the route is express's): the bytes this route sent before it was an operation.
    const express = res as Response
    if (op.raw) {
      const raw = op.raw(output)
      express.type(raw.contentType).send(raw.body)
      return
    }
    express.status(op.status).json({ success: true, ...(output as object) })
  },
})
