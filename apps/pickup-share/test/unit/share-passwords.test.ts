import { hashPassword } from '@quartet/core/auth'
import { fixedClock } from '@quartet/core/clock'
import { ApiError } from '@quartet/core/errors'
import { MemoryKeyValueStore } from '@quartet/core/kv'
import { SharePasswords } from '../../src/domain/share-passwords.ts'
import { ZSettings } from '../../src/domain/settings.ts'
import { WindowCounters } from '../../src/domain/window-counters.ts'

const HOUR = 3_600_000
const settings = ZSettings.parse({ passwordFailuresPerIp: 3, passwordFailuresPerShare: 5 })
const clock = fixedClock('2026-11-29T06:00:00Z')
let counters: WindowCounters
let passwords: SharePasswords
let share: { id: string; passwordHash: string; expiresAt: Date }

beforeAll(async () => {
  share = {
    id: 'share-1',
    passwordHash: await hashPassword('right one'),
    expiresAt: new Date('2026-12-01T00:00:00Z'),
  }
})
beforeEach(() => {
  counters = new WindowCounters(new MemoryKeyValueStore())
  passwords = new SharePasswords({ counters, clock, secret: 'unit-secret', grantTtlMs: 24 * HOUR })
})
afterEach(() => counters.close())

const codeOf = (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (err: unknown) => (err instanceof ApiError ? err.code : String(err)),
  )

describe('SharePasswords', () => {
  it('when a share has no password, then anything (or nothing) opens it', async () => {
    const open = { ...share, passwordHash: null }
    await expect(codeOf(passwords.unlock(open, {}, '192.0.2.1', settings))).resolves.toBe('ok')
    await expect(codeOf(passwords.unlock(open, { password: 'x' }, '192.0.2.1', settings))).resolves.toBe('ok')
  })

  it('when the password is missing, wrong or right, then required, wrong and open', async () => {
    await expect(codeOf(passwords.unlock(share, {}, '192.0.2.2', settings))).resolves.toBe(
      'share_password_required',
    )
    await expect(codeOf(passwords.unlock(share, { password: 'nope' }, '192.0.2.2', settings))).resolves.toBe(
      'share_password_wrong',
    )
    await expect(
      codeOf(passwords.unlock(share, { password: 'right one' }, '192.0.2.2', settings)),
    ).resolves.toBe('ok')
  })

  it('when a grant is issued, then it opens its share until it expires, and never another share', async () => {
    const { grant, expiresAt } = passwords.grantFor(share)
    expect(expiresAt.getTime()).toBe(clock.now().getTime() + 24 * HOUR)
    await expect(codeOf(passwords.unlock(share, { access: grant }, '192.0.2.3', settings))).resolves.toBe(
      'ok',
    )
    const other = { ...share, id: 'share-2' }
    await expect(codeOf(passwords.unlock(other, { access: grant }, '192.0.2.3', settings))).resolves.toBe(
      'share_password_required',
    )
    const rehashed = { ...share, passwordHash: await hashPassword('right one') }
    await expect(codeOf(passwords.unlock(rehashed, { access: grant }, '192.0.2.3', settings))).resolves.toBe(
      'share_password_required',
    )
    const [v, exp, mac] = grant.split('.')
    const longer = `${v}.${(parseInt(exp!, 36) + 86_400).toString(36)}.${mac}`
    await expect(codeOf(passwords.unlock(share, { access: longer }, '192.0.2.3', settings))).resolves.toBe(
      'share_password_required',
    )
    clock.advance(24 * HOUR + 1000)
    try {
      await expect(codeOf(passwords.unlock(share, { access: grant }, '192.0.2.3', settings))).resolves.toBe(
        'share_password_required',
      )
    } finally {
      clock.advance(-(24 * HOUR + 1000))
    }
  })

  it('when the share expires before the resume window ends, then the grant ends with the share', () => {
    const soon = { ...share, expiresAt: new Date(clock.now().getTime() + HOUR) }
    expect(passwords.grantFor(soon).expiresAt.getTime()).toBe(
      Math.floor(soon.expiresAt.getTime() / 1000) * 1000,
    )
  })

  it('when wrong passwords exceed the address budget, then 429 password_address, and right ones spent nothing', async () => {
    for (let i = 0; i < 5; i++)
      await expect(
        codeOf(passwords.unlock(share, { password: 'right one' }, '192.0.2.4', settings)),
      ).resolves.toBe('ok')
    for (let i = 0; i < 3; i++)
      await expect(
        codeOf(passwords.unlock(share, { password: `w${i}` }, '192.0.2.4', settings)),
      ).resolves.toBe('share_password_wrong')
    const refused = await passwords
      .unlock(share, { password: 'right one' }, '192.0.2.4', settings)
      .catch((e) => e)
    expect(refused).toBeInstanceOf(ApiError)
    expect(refused.code).toBe('rate_limit_exceeded')
    expect(refused.details).toMatchObject({ reason: 'password_address', limit: 3 })
    // The grant is not a guess: it still opens the share.
    const { grant } = passwords.grantFor(share)
    await expect(codeOf(passwords.unlock(share, { access: grant }, '192.0.2.4', settings))).resolves.toBe(
      'ok',
    )
  })
})
