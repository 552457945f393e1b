import type { Express, Request } from 'express'
import { ApiError, DEPENDENCY_RETRY_AFTER_SECONDS } from '@quartet/core/errors'
import type { OperationDoc } from '@quartet/core/openapi'
import type { ResumableUploads } from '../domain/resumable-uploads.ts'
import { TUS_UPLOAD_ID, type TusEndpoints } from '../drivers/tus-endpoints.ts'
import { lingerAfterAnswer } from './upload-connection.ts'

export const TUS_BASE_PATH = '/api/tus'

const tusHeaders =
  'Tus-Resumable: 1.0.0; Upload-Length, Upload-Offset, Upload-Metadata as tus 1.0 defines them'

/** What every request on an upload URL that names no upload gets (TusEndpoints' unknownUpload). */
const UNKNOWN_UPLOAD =
  '`upload_not_found` in the envelope: no such upload, or not its URL (`{id}` is `<base64url(pathname)>.<tag>` from Location; the pathname alone does not make it)'

export const tusOperations: OperationDoc[] = [
  {
    method: 'post',
    path: `${TUS_BASE_PATH}/{instance}`,
    operationId: 'tusCreate',
    summary: `tus 1.0 creation: X-Upload-Token from /api/upload (its tus.headers), Upload-Length = the declared size. ${tusHeaders}`,
    tags: ['public'],
    responses: {
      201: {
        description:
          'created; Location is the upload URL (the capability to resume or cancel it), Upload-Expires when it must be finished',
      },
      400: { description: 'Upload-Length missing or not a number, or a deferred length' },
      401: { description: 'token missing, invalid or expired' },
      409: { description: 'the permission was used for an upload already' },
      413: { description: 'Upload-Length above the permission' },
    },
  },
  {
    method: 'head',
    path: `${TUS_BASE_PATH}/{instance}/{id}`,
    operationId: 'tusOffset',
    summary: 'tus 1.0: the upload offset reached so far (resume from here)',
    tags: ['public'],
    responses: {
      200: { description: 'Upload-Offset, Upload-Length' },
      404: { description: UNKNOWN_UPLOAD },
      410: { description: 'expired' },
    },
  },
  {
    method: 'patch',
    path: `${TUS_BASE_PATH}/{instance}/{id}`,
    operationId: 'tusAppend',
    summary: 'tus 1.0: append bytes at Upload-Offset (application/offset+octet-stream)',
    tags: ['public'],
    responses: {
      204: { description: 'appended; Upload-Offset is the new offset' },
      404: { description: UNKNOWN_UPLOAD },
      409: { description: 'Upload-Offset does not match the server' },
      410: { description: 'the upload expired' },
      413: { description: 'more bytes than Upload-Length' },
    },
  },
  {
    method: 'delete',
    path: `${TUS_BASE_PATH}/{instance}/{id}`,
    operationId: 'tusTerminate',
    summary: 'tus 1.0 termination: removes an unfinished upload and gives its reservation back',
    tags: ['public'],
    responses: {
      204: { description: 'terminated' },
      400: { description: 'the upload is finished' },
      404: { description: UNKNOWN_UPLOAD },
    },
  },
]

/**
 * No CORS on uploads (README "Cross-origin uploads"): the send page is same-origin, and an upload
 * from another site's page is not offered. @tus/server answers `Access-Control-Allow-Origin: *`
 * (and a preflight without the X-Upload-Token header the creation needs) unless told otherwise;
 * its CORS headers are dropped, so a browser on another origin is refused plainly, as it is on
 * /api/upload.
 */
const isCorsHeader = (name: string) => name.toLowerCase().startsWith('access-control-')

/** writeHead's headers argument without CORS headers (an object, [name, value] pairs or a flat list). */
function withoutCors(arg: unknown): unknown {
  if (Array.isArray(arg)) {
    if (arg.every((x) => Array.isArray(x)))
      return arg.filter((pair: unknown[]) => !isCorsHeader(String(pair[0])))
    const kept: unknown[] = []
    for (let i = 0; i + 1 < arg.length; i += 2)
      if (!isCorsHeader(String(arg[i]))) kept.push(arg[i], arg[i + 1])
    return kept
  }
  if (arg && typeof arg === 'object')
    return Object.fromEntries(Object.entries(arg).filter(([name]) => !isCorsHeader(name)))
  return arg
}

/**
 * Resumable uploads (tus 1.0) under /api/tus/<instance>: creation is checked here first (the
 * permission's token and exact length, answered in the service's envelope), then every request
 * goes to the instance's @tus/server. The upload URL itself is the capability to resume: its last
 * segment carries a tag of the server's secret beside the pathname, and a URL without the right tag
 * is answered as an unknown upload (TusEndpoints), so knowing a pathname is not enough.
 */
export function registerTus(app: Express, s: { resumable: ResumableUploads; tus: TusEndpoints }): void {
  app.all([`${TUS_BASE_PATH}/:instance`, `${TUS_BASE_PATH}/:instance/:id`], async (req: Request, res) => {
    const instance = String(req.params.instance)
    res.set('Cache-Control', 'no-store')
    // tus answers a failed store or Redis with 503 (TusEndpoints' onResponseError); the client is
    // told when to come back, as every 503 of this service does.
    const writeHead = res.writeHead.bind(res) as (...args: unknown[]) => typeof res
    res.writeHead = ((status: number, ...rest: unknown[]) => {
      if (status === 503) res.setHeader('Retry-After', String(DEPENDENCY_RETRY_AFTER_SECONDS))
      for (const name of res.getHeaderNames()) if (isCorsHeader(name)) res.removeHeader(name)
      return writeHead(status, ...rest.map(withoutCors))
    }) as typeof res.writeHead
    if (req.method === 'POST' && req.params.id === undefined) {
      if (req.get('upload-defer-length') !== undefined)
        throw new ApiError('bad_request', 'deferred lengths are not accepted: send Upload-Length')
      const length = req.get('upload-length')
      if (length !== undefined && !/^\d{1,16}$/.test(length))
        throw new ApiError('bad_request', 'Upload-Length must be a non-negative integer')
      const pathname = await s.resumable.begin(
        instance,
        req.get('x-upload-token'),
        length === undefined ? null : Number(length),
      )
      ;(req as Request & { [TUS_UPLOAD_ID]?: string })[TUS_UPLOAD_ID] = pathname
      try {
        if (!(await s.tus.handle(instance, req, res)))
          throw new ApiError('store_not_found', `no storage instance ${instance} takes resumable uploads`)
      } finally {
        // The store failed to create it: the permission may be used again (the client retries).
        if (res.statusCode >= 500 || !res.headersSent) await s.resumable.creationFailed(instance, pathname)
      }
      return
    }
    try {
      if (!(await s.tus.handle(instance, req, res)))
        throw new ApiError('store_not_found', `no storage instance ${instance} takes resumable uploads`)
    } catch (err) {
      // A refused PATCH (no such upload, or not its URL) is answered before its body is read: the
      // connection closes after the answer, lingering as a refused PUT's does (a stranger's bytes
      // are not read on into a kept-alive connection, and the client still reads the 404).
      lingerAfterAnswer(req, res)
      throw err
    }
  })
}
