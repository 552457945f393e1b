import { randomUUID } from 'node:crypto'
import { Readable } from 'node:stream'
import { ApiError } from '@quartet/core/errors'
import type { Logger } from '@quartet/core/log'
import type { InstancesPort } from './ports.ts'
import type { StorageDriver, StoreKind } from './storage.ts'
import { type DriverFactory, SECRET_SETTINGS, type StorageInstances } from './storage-instances.ts'

/** What a connection test found: the first step that failed, in words, or a note on success. */
export interface ConnectionTest {
  ok: boolean
  /** The step that failed: settings (could not build a client), write, read, delete, or connect (git). */
  step?: 'settings' | 'connect' | 'write' | 'read' | 'delete'
  message?: string
  /** Why it failed, as a code the page translates (message has the details). */
  reason?: ProbeReason
  note?: string
  /** The note as a code the page translates. */
  noteCode?: 'branch_missing'
  ms: number
}

export const PROBE_REASONS = [
  'unreachable',
  'timeout',
  'no_bucket',
  'credentials',
  'auth',
  'no_repo',
  'other',
] as const
export type ProbeReason = (typeof PROBE_REASONS)[number]

export interface TestConnectionInput {
  /** An existing instance: its stored credentials fill those left out of `settings`. */
  name?: string | undefined
  kind?: StoreKind | undefined
  /** Absent with a name: the instance as it is configured now. */
  settings?: Record<string, unknown> | undefined
}

/** How long one step of a connection test may take before it counts as failed. */
const PROBE_STEP_MS = 15_000

/** Why a probe step failed, as a code and in words (S3 error codes and socket errors). */
export function describeProbeError(err: unknown): { reason: ProbeReason; message: string } {
  const e = err as { code?: string; message?: string; reason?: string }
  const code = typeof e?.code === 'string' ? e.code : ''
  if (typeof e?.reason === 'string' && (PROBE_REASONS as readonly string[]).includes(e.reason))
    return { reason: e.reason as ProbeReason, message: e.message ?? String(err) }
  if (err instanceof ApiError) return { reason: 'other', message: err.message }
  if (code === 'PROBE_TIMEOUT') return { reason: 'timeout', message: e.message ?? 'no answer' }
  if (/^(ECONNREFUSED|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|ECONNRESET|EHOSTUNREACH)$/.test(code))
    return { reason: 'unreachable', message: `could not connect to the server (${code})` }
  if (code === 'NoSuchBucket')
    return { reason: 'no_bucket', message: 'the bucket does not exist (create it first)' }
  if (/^(InvalidAccessKeyId|SignatureDoesNotMatch|AccessDenied|InvalidToken|ExpiredToken)$/.test(code))
    return { reason: 'credentials', message: `the server refused the access key or secret key (${code})` }
  if (code) return { reason: 'other', message: `${code}: ${e.message ?? ''}`.trim() }
  return { reason: 'other', message: e?.message ?? String(err) }
}

export interface ConnectionTestsDeps {
  instances: Pick<StorageInstances, 'sync' | 'driver'>
  repo: Pick<InstancesPort, 'findByName'>
  factory: DriverFactory
  logger: Logger
}

/** The admin's connection test of a storage instance, new or configured. */
export class ConnectionTests {
  constructor(private readonly d: ConnectionTestsDeps) {}

  /**
   * Tries an instance's connection without saving anything: a new one from its settings, or an
   * existing one as configured (or with changed settings, its stored credentials filling the gaps).
   * Blob and bucket stores take a small probe object (written, read back, deleted); a git remote is
   * listed (`git ls-remote`), so no commit is made. Credentials never appear in the answer.
   */
  async testConnection(input: TestConnectionInput): Promise<ConnectionTest> {
    await this.d.instances.sync()
    const existing = input.name ? await this.d.repo.findByName(input.name) : undefined
    if (input.name && !existing && !input.kind)
      throw new ApiError('store_not_found', `no storage instance named ${input.name}`)
    if (existing && input.kind && input.kind !== existing.kind)
      throw new ApiError('bad_request', `body.kind: instance ${existing.name} is a ${existing.kind} store`)
    const kind = (existing?.kind as StoreKind | undefined) ?? input.kind
    if (!kind) throw new ApiError('bad_request', 'body.kind: required when testing a new instance')
    if (existing?.builtin && input.settings)
      throw new ApiError(
        'store_builtin',
        'the settings of a built-in instance come from environment variables; test it without settings',
      )

    const settings: Record<string, unknown> = { ...(input.settings ?? existing?.settings ?? {}) }
    const secrets: string[] = []
    if (existing && input.settings)
      for (const k of SECRET_SETTINGS)
        if (settings[k] === undefined && existing.settings[k] !== undefined)
          settings[k] = existing.settings[k]
    for (const k of SECRET_SETTINGS) if (typeof settings[k] === 'string') secrets.push(settings[k] as string)
    const hide = (text: string) => secrets.reduce((t, x) => (x ? t.split(x).join('***') : t), text)

    const started = Date.now()
    const done = (r: Omit<ConnectionTest, 'ms'>): ConnectionTest => ({
      ...r,
      ...(r.message ? { message: hide(r.message) } : {}),
      ms: Date.now() - started,
    })

    // The instance's own driver when nothing changes; else a throwaway one.
    let driver: StorageDriver | undefined
    let throwaway = false
    if (existing && !input.settings) driver = await this.d.instances.driver(existing.id)
    if (!driver) {
      try {
        driver = this.d.factory(kind, `probe-${randomUUID()}`, settings)
        throwaway = true
      } catch (err) {
        if (err instanceof ApiError) throw err
        throw new ApiError('bad_request', `body.settings: ${hide((err as Error).message)}`)
      }
    }
    const step = async <T>(name: NonNullable<ConnectionTest['step']>, run: () => Promise<T>): Promise<T> => {
      let timer: NodeJS.Timeout | undefined
      try {
        return await Promise.race([
          run(),
          new Promise<never>((_, reject) => {
            timer = setTimeout(
              () =>
                reject(
                  Object.assign(new Error(`no answer within ${PROBE_STEP_MS / 1000} s`), {
                    code: 'PROBE_TIMEOUT',
                  }),
                ),
              PROBE_STEP_MS,
            )
          }),
        ])
      } catch (err) {
        const { reason, message } = describeProbeError(err)
        throw Object.assign(new Error(message), { step: name, reason })
      } finally {
        clearTimeout(timer)
      }
    }
    try {
      if (driver.checkConnection) {
        const { note, noteCode } = await step('connect', () => driver.checkConnection!())
        return done({ ok: true, ...(note ? { note } : {}), ...(noteCode ? { noteCode } : {}) })
      }
      const probe = `pickup-share-probe-${randomUUID()}.txt`
      const body = Buffer.from('pickup-share connection test\n')
      await step('write', () =>
        driver.put(probe, Readable.from([body]), {
          size: body.length,
          maxBytes: body.length,
          type: 'text/plain',
          allowOverwrite: true,
        }),
      )
      const info = await step('read', () => driver.stat(probe))
      if (!info || info.size !== body.length)
        return done({
          ok: false,
          step: 'read',
          reason: 'other',
          message: 'the probe object was written but could not be read back',
        })
      await step('delete', () => driver.delete(probe))
      return done({ ok: true })
    } catch (err) {
      const e = err as Error & { step?: ConnectionTest['step']; reason?: ProbeReason }
      this.d.logger.info(
        { store: input.name ?? kind, step: e.step, err: hide(e.message) },
        'connection test failed',
      )
      return done({ ok: false, step: e.step ?? 'connect', reason: e.reason ?? 'other', message: e.message })
    } finally {
      if (throwaway) await driver.discard?.().catch(() => undefined)
    }
  }
}
