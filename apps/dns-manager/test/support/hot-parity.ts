import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { metricsRegistryOf, requestListener } from '@quartet/core/http'
import type { Express } from 'express'

/**
 * Parity of a route answered before express (a hot route) with express's answer to the same
 * request: raw requests on real connections, the request sent once to each path with the same
 * X-Request-Id, and status, headers and body compared (hot-graphql, hot-rpc).
 */

export interface Answer {
  status: number
  headers: Record<string, string | string[] | undefined>
  text: string
}

/** One request on a real connection: raw bytes, any headers, optionally chunked. */
export function send(
  url: string,
  path: string,
  headers: Record<string, string>,
  body: Buffer | string,
  options: { chunked?: boolean } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const buf = typeof body === 'string' ? Buffer.from(body) : body
    const req = http.request(
      `${url}${path}`,
      {
        method: 'POST',
        headers: options.chunked ? headers : { ...headers, 'Content-Length': String(buf.length) },
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('end', () =>
          resolve({ status: res.statusCode!, headers: res.headers, text: Buffer.concat(chunks).toString() }),
        )
      },
    )
    req.on('error', reject)
    if (options.chunked) {
      req.write(buf.subarray(0, 1))
      req.end(buf.subarray(1))
    } else req.end(buf)
  })
}

/** Headers that differ between any two answers (the date, the rate-limit count). */
export function comparable(headers: Answer['headers']) {
  const {
    date: _d,
    'ratelimit-remaining': _r,
    'ratelimit-reset': _t,
    connection: _c,
    'keep-alive': _k,
    ...rest
  } = headers
  return rest
}

/** The app on a loopback port of its own, served as `serve` serves it (hot routes first). */
export async function listen(app: Express): Promise<{ url: string; close: () => Promise<void> }> {
  const server = http.createServer(requestListener(app)).listen(0, '127.0.0.1')
  await new Promise((resolve) => server.once('listening', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  }
}

/** How many answers the metrics count under the route labels `counts` takes. */
export async function answersOn(app: Express, counts: (route: string) => boolean): Promise<number> {
  const metrics = await metricsRegistryOf(app)!.getSingleMetricAsString('http_requests_total')
  return metrics
    .split('\n')
    .filter((line) => {
      const route = /route="([^"]*)"/.exec(line)?.[1]
      return route !== undefined && counts(route)
    })
    .reduce((sum, line) => sum + Number(line.split(' ').pop()), 0)
}

/**
 * `both(url, headers, body)`: sends the request to `paths(prefix).hot` and then to
 * `paths(prefix).express` with the same X-Request-Id (`<idPrefix>-<n>`), expects the same
 * status, body and comparable headers, and returns the hot route's answer.
 */
export function parity(options: {
  idPrefix: string
  paths: (prefix: string) => { hot: string; express: string }
  /** How much of the request body a failed comparison shows. */
  shown: number
}) {
  let n = 0
  return async function both(
    url: string,
    headers: Record<string, string>,
    body: Buffer | string,
    sendOptions: { chunked?: boolean; prefix?: string } = {},
  ): Promise<Answer> {
    const id = `${options.idPrefix}-${++n}`
    const paths = options.paths(sendOptions.prefix ?? '')
    const hot = await send(url, paths.hot, { ...headers, 'X-Request-Id': id }, body, sendOptions)
    const viaExpress = await send(url, paths.express, { ...headers, 'X-Request-Id': id }, body, sendOptions)
    const shown = String(body).slice(0, options.shown)
    expect({ body: shown, status: hot.status, text: hot.text }).toEqual({
      body: shown,
      status: viaExpress.status,
      text: viaExpress.text,
    })
    expect(comparable(hot.headers)).toEqual(comparable(viaExpress.headers))
    expect(hot.headers['x-request-id']).toBe(id)
    expect(hot.headers['cache-control']).toBe('no-store')
    return hot
  }
}
