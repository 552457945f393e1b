import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { Express } from 'express'
import type client from 'prom-client'

/**
 * What an app made by createHttpApp carries for the rest of core (serve, the test helpers): its
 * metrics registry, its envelope style, whether it is draining, and the answers asked before
 * express. Kept under symbols on the express app, so that an app is the one handle a caller passes.
 */
export const METRICS = Symbol.for('quartet.metrics')
export const ENVELOPE = Symbol.for('quartet.envelope')
const DRAINING = Symbol.for('quartet.draining')

/** The Content-Type express's res.json gives. */
export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8'

export const missingHost = (req: IncomingMessage) =>
  req.headers.host === undefined && req.httpVersion === '1.1'

/** The metrics registry createHttpApp made for `app` (what `serve` exposes on METRICS_PORT). */
export function metricsRegistryOf(app: object): client.Registry | undefined {
  return (app as { [METRICS]?: client.Registry })[METRICS]
}

/** Whether `serve` has begun shutting this app down (readiness answers 503 from then on). */
export function isDraining(app: object): boolean {
  return (app as { [DRAINING]?: boolean })[DRAINING] === true
}

export function markDraining(app: Express): void {
  ;(app as Express & { [DRAINING]?: boolean })[DRAINING] = true
}

/** An answer asked before express: true when it has taken the request, false to pass it on. */
export type FirstAnswer = (req: IncomingMessage, res: ServerResponse) => boolean

const FIRST_ANSWERS = Symbol.for('quartet.firstAnswers')
const LISTENER = Symbol.for('quartet.requestListener')
type WithAnswers = Express & { [FIRST_ANSWERS]?: FirstAnswer[]; [LISTENER]?: RequestListener }
type RequestListener = (req: IncomingMessage, res: ServerResponse) => void

/**
 * Puts `answer` in front of express, for a read answered faster than express's router and
 * middleware give it (a hot route, design-archive's documents). The answers are asked in the
 * order they were registered, each seeing every request the ones before it left; the first to
 * return true has taken the request (express never sees it), and a request none takes goes to
 * express. Whoever answers owns what the pipeline would have done: request id, security
 * headers, metrics (HttpApp.observe), errors.
 *
 * The answers run in the server's request listener (`requestListener`), which `serve` and the
 * test helpers (`startTestServer`, `request` in `@quartet/core/testing`) use. Express alone
 * (`app.listen`, `http.createServer(app)`) serves every request itself: an answer asked first
 * must give what express gives for the same request, so the service is the same either way.
 */
export function answerBeforeExpress(app: Express, answer: FirstAnswer): void {
  const answers = ((app as WithAnswers)[FIRST_ANSWERS] ??= [])
  answers.push(answer)
}

/**
 * A listener of the answers asked before express alone: a request none of them takes gets
 * `fallback` instead of express (for tests that must know which way a request was answered).
 */
export function answersBeforeExpressOnly(app: Express, fallback: RequestListener): RequestListener {
  const answers = ((app as WithAnswers)[FIRST_ANSWERS] ??= [])
  return (req, res) => {
    for (let i = 0; i < answers.length; i++) if (answers[i]!(req, res)) return
    fallback(req, res)
  }
}

/**
 * The request listener of a service: the answers registered with answerBeforeExpress, then
 * express. One per app, so a server made later sees answers registered since.
 */
export function requestListener(app: Express): RequestListener {
  const withAnswers = app as WithAnswers
  const existing = withAnswers[LISTENER]
  if (existing) return existing
  const listener = answersBeforeExpressOnly(app, app as unknown as RequestListener)
  withAnswers[LISTENER] = listener
  return listener
}

const SERVER_HOOKS = Symbol.for('quartet.serverHooks')
type WithHooks = Express & { [SERVER_HOOKS]?: Array<(server: Server) => void> }

/**
 * Runs `hook` on every server core makes for the app (`serve`, `startTestServer`), before it
 * listens: for what a server decides rather than a request, such as how it answers
 * `Expect: 100-continue` (pickup-share's uploads listen for 'checkContinue').
 */
export function onServer(app: Express, hook: (server: Server) => void): void {
  ;((app as WithHooks)[SERVER_HOOKS] ??= []).push(hook)
}

/**
 * The HTTP server for an app: its request listener (`listener`, else `requestListener(app)`),
 * node's own answer to a request without Host turned off (the pipeline answers it in the
 * envelope), and the hooks registered with `onServer`. Not listening yet.
 */
export function serverFor(app: Express, listener: RequestListener = requestListener(app)): Server {
  const server = createServer({ requireHostHeader: false }, listener)
  for (const hook of (app as WithHooks)[SERVER_HOOKS] ?? []) hook(server)
  return server
}
