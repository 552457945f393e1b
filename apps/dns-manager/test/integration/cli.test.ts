import { execFile } from 'node:child_process'
import path from 'node:path'
import { promisify } from 'node:util'
import { request } from '@quartet/core/testing'
import { builtEntry } from '@quartet/core/testing/built'
import { buildApp, unique, useDeps } from '../helpers.ts'

const deps = useDeps()
const run = promisify(execFile)
const appDir = path.join(__dirname, '../..')
/** The built CLI (`node dist/cli.js`), as operators run it. */
const CLI = builtEntry(appDir, 'cli')

async function cli(...args: string[]): Promise<{ code: number; json: Record<string, unknown> }> {
  const env = {
    ...process.env,
    DATABASE_URL: deps.database.url,
    DATABASE_SCHEMA: deps.database.schema,
    LOG_LEVEL: 'silent',
  }
  try {
    const { stdout } = await run(process.execPath, [CLI, ...args], { cwd: appDir, env })
    return { code: 0, json: JSON.parse(stdout) }
  } catch (err) {
    const e = err as { code: number; stderr: string }
    return { code: e.code, json: JSON.parse(e.stderr) }
  }
}

describe('operator CLI', () => {
  it('when an account is created, updated, credited and a zone added, then the API sees each change', async () => {
    const email = `${unique('cli')}@example.test`
    const created = await cli(
      'accounts:create',
      '--email',
      email,
      '--quota',
      '2',
      '--balance-cents',
      '150',
      '--allow-ip',
      '127.0.0.1',
      '--allow-ip',
      '::1',
    )
    expect(created.code).toBe(0)
    expect(created.json).toEqual({
      account_id: expect.any(String),
      api_key: expect.stringMatching(/^dnsm_/),
      api_secret: expect.stringMatching(/^[0-9a-f]{64}$/),
    })
    const headers = {
      'X-API-Key': created.json.api_key as string,
      'X-API-Secret': created.json.api_secret as string,
    }
    const { app } = buildApp(deps)
    expect(
      (await request(app).post('/rest/auth/verify').set(headers).expect(200)).body.account.quota,
    ).toEqual({ used: 0, total: 2, available: 2 })

    const zone = `${unique('cli')}.test`
    expect((await cli('zones:add', zone, '--price-cents', '100', '--term-years', '2')).json).toEqual({
      zone: { name: zone, price_cents: 100, term_years: 2 },
      upstream: { provider: 'database', zone: 'not managed' },
    })
    const credited = await cli(
      'balance:credit',
      '--account',
      created.json.account_id as string,
      '--cents',
      '50',
    )
    expect(credited.json).toEqual({ account_id: created.json.account_id, balance_cents: 200 })
    const system = await request(app).get('/rest/system').set(headers).expect(200)
    expect(system.body.system.zones).toContainEqual({
      name: zone,
      price_cents: 100,
      term_years: 2,
      never_expires: false,
    })

    await cli('accounts:update', '--account', created.json.account_id as string, '--allow-ip', '192.0.2.0/24')
    await request(app).post('/rest/auth/verify').set(headers).expect(403)
    await cli(
      'accounts:update',
      '--account',
      created.json.account_id as string,
      '--clear-allow-list',
      '--disable-api',
    )
    expect((await request(app).post('/rest/auth/verify').set(headers).expect(403)).body.error.code).toBe(
      'api_access_disabled',
    )
  }, 60_000)

  it('when flags are wrong, then the CLI exits non-zero with a JSON error and writes nothing', async () => {
    const bad = await cli('accounts:create', '--email', 'not-an-email')
    expect(bad.code).not.toBe(0)
    expect(bad.json).toMatchObject({ error: { code: 'bad_request' } })
    expect(
      (await cli('balance:credit', '--account', '00000000-0000-4000-8000-000000000000', '--cents', '5')).json,
    ).toMatchObject({ error: { code: 'not_found' } })
    expect((await cli('zones:add', 'bad_zone!', '--price-cents', '1')).json).toMatchObject({
      error: { code: 'bad_request' },
    })
  }, 60_000)
})

describe('operator CLI: back-office invitations', () => {
  it('when an invitation is made, then its link signs one person up while REGISTRATION=invite, once', async () => {
    const { startBackOffice, browserAgent, tokenIn, PASSWORD } = await import('../support/back-office.ts')
    const invite = await cli('invites:create', '--hours', '2')
    expect(invite.code).toBe(0)
    expect(invite.json).toEqual({
      invite_url: expect.stringContaining('/account/signup?invite='),
      expires_at: expect.any(String),
    })
    const token = new URL(String(invite.json.invite_url)).searchParams.get('invite')!
    const bo = await startBackOffice(deps, { REGISTRATION: 'invite' })
    try {
      const email = `${unique('inv')}@example.test`
      const without = await browserAgent(bo.url).post('/account/api/signup', { email }).expect(403)
      expect(without.body.error.code).toBe('invite_required')
      await browserAgent(bo.url).post('/account/api/signup', { email, invite: token }).expect(200)
      const link = tokenIn((await bo.smtp.mailTo(email)).text, '/account/signup/complete')
      await browserAgent(bo.url)
        .post('/account/api/signup/complete', { token: link, password: PASSWORD })
        .expect(201)
      // The invitation is spent: a second person cannot use it.
      const second = await browserAgent(bo.url)
        .post('/account/api/signup', { email: `${unique('inv2')}@example.test`, invite: token })
        .expect(400)
      expect(second.body.error.code).toBe('link_invalid')
    } finally {
      await bo.close()
    }
  })
})
