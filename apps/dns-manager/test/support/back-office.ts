import type { Clock } from '@quartet/core/clock'
import {
  createTestKv,
  request,
  type RunningServer,
  startTestServer,
  type TestDeps,
} from '@quartet/core/testing'
import type TestAgent from 'supertest/lib/agent'
import type { DnsManager } from '../../src/app.ts'
import type { Db } from '../../src/store/db.ts'
import { addZone, buildApp, unique } from '../helpers.ts'
import { startSmtpServer, type SmtpServer } from './smtp.ts'

export const PUBLIC_URL = 'http://dns.test'
export const PASSWORD = 'correct horse battery'

export interface BackOffice {
  manager: DnsManager
  server: RunningServer
  smtp: SmtpServer
  url: string
  close(): Promise<void>
}

/** dns-manager on a loopback port, mailing through a real SMTP server in this process. */
export async function startBackOffice(
  deps: TestDeps<Db>,
  env: Record<string, string> = {},
  options: { ownKv?: boolean; clock?: Clock } = {},
): Promise<BackOffice> {
  const smtp = await startSmtpServer()
  // ownKv: counters of this app alone (the file's other apps share the test's kv and its address).
  const withKv = options.ownKv ? { database: deps.database, db: deps.db, kv: createTestKv() } : deps
  const manager = buildApp(withKv, {
    env: { SMTP_URL: smtp.url, PUBLIC_URL, REGISTRATION: 'open', ...env },
    ...(options.clock ? { clock: options.clock } : {}),
  })
  const server = await startTestServer(manager.app)
  return {
    manager,
    server,
    smtp,
    url: server.url,
    close: async () => {
      await server.close()
      await smtp.close()
      if (withKv !== deps) await withKv.kv.close()
    },
  }
}

/** A browser-like client: keeps the cookie, sends what the pages send on every write. */
export function browserAgent(url: string) {
  const agent = request.agent(url)
  const write = (method: 'post', path: string) =>
    agent[method](path)
      .set('X-Requested-With', 'fetch')
      .set('Origin', url)
      .set('Sec-Fetch-Site', 'same-origin')
  return {
    agent,
    post: (path: string, body: object = {}) => write('post', path).send(body),
    get: (path: string) => agent.get(path),
    op: (name: string, body: object = {}) => write('post', `/account/api/op/${name}`).send(body),
  } satisfies Record<string, unknown> & { agent: TestAgent }
}
export type BrowserAgent = ReturnType<typeof browserAgent>

/** The token of the first link to `path` in a mail. */
export function tokenIn(text: string, path: string): string {
  const m = new RegExp(`${PUBLIC_URL}${path}\\?(?:token|invite)=([A-Za-z0-9_-]+)`).exec(text)
  if (!m) throw new Error(`no ${path} link in:\n${text}`)
  return m[1]!
}

/** Signs up through the mail link: a fresh address, signed in on the returned agent. */
export async function signUp(bo: BackOffice, email = `${unique('p')}@example.test`) {
  const browser = browserAgent(bo.url)
  await browser.post('/account/api/signup', { email }).expect(200)
  const mail = await bo.smtp.mailTo(email)
  const token = tokenIn(mail.text, '/account/signup/complete')
  await browser.post('/account/api/signup/complete', { token, password: PASSWORD }).expect(201)
  return { browser, email }
}

export async function freeZone(deps: TestDeps<Db>, priceCents = 0, termYears = 1): Promise<string> {
  const name = `${unique('z')}.test`
  await addZone(deps, name, priceCents, termYears)
  return name
}
