import { execFile } from 'node:child_process'
import path from 'node:path'
import { promisify } from 'node:util'
import { request } from '@quartet/core/testing'
import { hashToken } from '@quartet/core/auth'
import { builtEntry } from '@quartet/core/testing/built'
import { bearer, buildApp, useKeyInfoDeps } from '../helpers.ts'

const deps = useKeyInfoDeps()
const run = promisify(execFile)

const CLI = builtEntry(path.join(__dirname, '../..'), 'cli')

/** Runs the built CLI (`node dist/cli.js`, as operators do) against this file's schema; resolves with exit code and parsed output. */
async function cli(...args: string[]): Promise<{ code: number; out: unknown; err: string }> {
  const env: Record<string, string | undefined> = {
    ...process.env,
    DATABASE_URL: deps.database.url,
    DATABASE_SCHEMA: deps.database.schema,
    KEY_INFO_DATABASE_URL: undefined,
    KEY_INFO_DATABASE_SCHEMA: undefined,
    REDIS_URL: undefined,
    LOG_LEVEL: 'silent',
  }
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, ...args], {
      cwd: path.join(__dirname, '../..'),
      env,
    })
    return { code: 0, out: JSON.parse(stdout), err: stderr }
  } catch (e) {
    const failed = e as { code: number; stdout: string; stderr: string }
    // The JSON error is the CLI's own line; Node may print warnings around it.
    const errorLine = failed.stderr.split('\n').find((l) => l.startsWith('{')) ?? failed.stderr
    return { code: failed.code, out: failed.stdout, err: errorLine }
  }
}

describe('operator CLI', () => {
  jest.setTimeout(60_000)

  it('when keys:create makes a management key, then it prints {key, hash} and the key can manage its workspace', async () => {
    const { code, out } = await cli(
      'keys:create',
      '--name',
      'first admin',
      '--management',
      '--limit',
      '25.5',
      '--limit-reset',
      'monthly',
      '--expires-at',
      '2099-01-01T00:00:00Z',
    )
    expect(code).toBe(0)
    const { key, hash } = out as { key: string; hash: string }
    expect(Object.keys(out as object).sort()).toEqual(['hash', 'key'])
    expect(key).toMatch(/^sk-qk-v1-[0-9a-f]{64}$/)
    expect(hash).toBe(hashToken(key))
    const rec = (await request(buildApp(deps)).get('/api/v1/key').set(bearer(key)).expect(200)).body.data
    expect(rec).toMatchObject({
      is_management_key: true,
      limit: 25.5,
      limit_reset: 'monthly',
      expires_at: '2099-01-01T00:00:00.000Z',
      creator_user_id: 'cli',
      is_free_tier: false,
    })
    await request(buildApp(deps)).get('/api/v1/keys').set(bearer(key)).expect(200)

    // usage:record against that key, then a replay with the same --id is a duplicate.
    const first = await cli(
      'usage:record',
      '--hash',
      hash,
      '--amount',
      '0.75',
      '--free-model',
      '--id',
      'cli-ev-1',
    )
    expect(first).toMatchObject({ code: 0, out: { id: 'cli-ev-1', status: 'accepted' } })
    // Without Redis a running service's record cache cannot hear of the change: the CLI says so.
    expect(first.err).toContain('REDIS_URL is not set')
    const replay = await cli(
      'usage:record',
      '--hash',
      hash,
      '--amount',
      '0.75',
      '--free-model',
      '--id',
      'cli-ev-1',
    )
    expect(replay.out).toEqual({ id: 'cli-ev-1', status: 'duplicate' })
    const byok = await cli(
      'usage:record',
      '--hash',
      hash,
      '--amount',
      '2',
      '--byok',
      '--at',
      new Date().toISOString(),
    )
    expect((byok.out as { status: string }).status).toBe('accepted')
    const after = (await request(buildApp(deps)).get('/api/v1/key').set(bearer(key)).expect(200)).body.data
    expect(after).toMatchObject({ usage: 0.75, byok_usage: 2, limit_remaining: 24.75 })
    expect(after.free_model_daily_requests.used).toBe(1)
  })

  it('when keys:create makes a free-tier key, then its free-model limit defaults to the free-tier one', async () => {
    const { out } = await cli('keys:create', '--name', 'trial', '--free-tier')
    const rec = (
      await request(buildApp(deps))
        .get('/api/v1/key')
        .set(bearer((out as { key: string }).key))
    ).body.data
    expect(rec).toMatchObject({
      is_free_tier: true,
      is_management_key: false,
      free_model_daily_requests: { limit: 50 },
    })
  })

  it('when flags are bad, then the CLI exits non-zero with a JSON error on stderr and writes nothing', async () => {
    const before = await deps.db.apiKey.count()
    for (const args of [
      ['keys:create'],
      ['keys:create', '--name', 'x', '--limit', '-3'],
      ['keys:create', '--name', 'x', '--limit-reset', 'yearly'],
      ['keys:create', '--name', 'x', '--expires-at', '2020-01-01T00:00:00Z'],
      ['keys:create', '--name', 'x', '--expires-at', '2099-01-01T00:00:00+02:00'],
      ['keys:create', '--name', 'x', '--bogus'],
      ['usage:record', '--hash', 'f'.repeat(64), '--amount', 'NaN'],
      ['usage:record', '--hash', 'nope', '--amount', '1'],
    ]) {
      const { code, err } = await cli(...args)
      expect([args, code]).toEqual([args, 1])
      expect(JSON.parse(err)).toEqual({ error: { code: expect.any(String), message: expect.any(String) } })
    }
    expect(await deps.db.apiKey.count()).toBe(before)
  })

  it('when usage:record names an unknown key, then it fails with key_not_found', async () => {
    const { code, err } = await cli('usage:record', '--hash', 'e'.repeat(64), '--amount', '1')
    expect(code).toBe(1)
    expect(JSON.parse(err).error.code).toBe('key_not_found')
  })
})
