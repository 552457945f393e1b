import { generateToken, hashToken, ipAllowed, safeEqual } from '@quartet/core/auth'
import { ApiError } from '@quartet/core/errors'
import type { Clock } from '@quartet/core/clock'
import type { Logger } from '@quartet/core/log'
import type { RecordFields, RecordRow, Repository, SubdomainRow, ZoneRow } from '../store/repository.ts'
import './errors.ts'
import type { FailedSecretGuard } from './failed-secrets.ts'
import { fqdnOf, MAX_NAME_LENGTH, normaliseHostname, normaliseLabel } from './names.ts'
import { type DnsProvider, ProviderError, type RRset } from './provider.ts'
import {
  bindZoneFile,
  checkCnameRules,
  RECORD_TYPES,
  rdataOf,
  type RecordInput,
  type RecordType,
  type RecordValues,
  TTL_DEFAULT,
  TTL_MAX,
  TTL_MIN,
  validateRecord,
} from './records.ts'

export const VERSION = '1.0.0'
export const PER_PAGE_MAX = 500
export const PER_PAGE_DEFAULT = 50
const DAY_MS = 86_400_000

export interface DomainSettings {
  apiKeyPrefix: string
  maxApiKeys: number
  renewWindowDays: number
  graceDays: number
  maxRecordsPerSubdomain: number
  reservedLabels: readonly string[]
  allowPrivateAddresses: boolean
  nameservers: readonly string[]
  providerTimeoutMs: number
  pendingTimeoutMs: number
  /** Shown by system.info. */
  rateLimitPerMinute: number
  rpcMaxBatch: number
}

/** Who is calling: the outcome of the authentication steps of the pipeline. */
export interface Principal {
  accountId: string
  credentialId: string
  apiKey: string
  ip: string | undefined
  /** The account as authentication read it, in this request. */
  account: { quotaTotal: number; balanceCents: number }
}

export type SubdomainStatus = 'active' | 'grace' | 'suspended'

export interface SubdomainView {
  id: number
  subdomain: string
  rootdomain: string
  full_domain: string
  status: SubdomainStatus
  created_at: string
  updated_at: string
  expires_at: string | null
  never_expires: boolean
}

export interface RecordView extends RecordFields {
  id: number
  created_at: string
  updated_at: string
}

export interface Page {
  cursor?: string | undefined
  per_page?: number | undefined
}

export type RecordPatch = Partial<Omit<RecordInput, 'type'>> & { type?: RecordType | undefined }

const iso = (d: Date) => d.toISOString()
const addYears = (d: Date, years: number) => {
  const r = new Date(d)
  r.setUTCFullYear(r.getUTCFullYear() + years)
  return r
}
const cursorOf = (id: number | undefined) => (id === undefined ? null : String(id))
function afterId(cursor: string | undefined): number {
  if (cursor === undefined || cursor === '') return 0
  if (!/^\d{1,10}$/.test(cursor))
    throw new ApiError('bad_request', 'cursor: is not a cursor from a previous page', { field: 'cursor' })
  return Number(cursor)
}

/** What a client sees of a record: a pending create is not there yet, a pending update still shows the old values. */
function confirmedView(r: RecordRow): RecordView | null {
  if (r.state === 'pending_create') return null
  const v = r.state === 'pending_update' && r.previous ? { ...r, ...r.previous } : r
  return {
    id: v.id,
    name: v.name,
    type: v.type,
    content: v.content,
    ttl: v.ttl,
    priority: v.priority,
    weight: v.weight,
    port: v.port,
    flag: v.flag,
    tag: v.tag,
    created_at: iso(v.createdAt),
    updated_at: iso(v.updatedAt),
  }
}

function asValues(r: RecordFields): RecordValues {
  return { ...r, type: r.type as RecordType }
}

/** A public key (prefix + 128 random bits) and a 64-hex secret; only the secret's SHA-256 is stored. */
export function issueCredential(prefix: string) {
  const apiKey = generateToken(prefix, 16)
  const apiSecret = generateToken('', 32)
  return { apiKey, apiSecret, stored: { publicKey: apiKey, secretHash: hashToken(apiSecret) } }
}

export function createDnsService(deps: {
  repo: Repository
  provider: DnsProvider
  clock: Clock
  logger: Logger
  settings: DomainSettings
  /** Budgets of failed secrets per address and per key (failed-secrets.ts). */
  guard: FailedSecretGuard
}) {
  const { repo, provider, clock, settings, guard } = deps
  const windowMs = settings.renewWindowDays * DAY_MS
  const graceMs = settings.graceDays * DAY_MS

  function statusOf(s: SubdomainRow, now: Date): SubdomainStatus {
    if (s.suspended) return 'suspended'
    if (s.neverExpires || !s.expiresAt || now < s.expiresAt) return 'active'
    if (now.getTime() < s.expiresAt.getTime() + graceMs) return 'grace'
    return 'suspended' // grace is over; the sweeper releases it
  }

  function subdomainView(s: SubdomainRow): SubdomainView {
    return {
      id: s.id,
      subdomain: s.label,
      rootdomain: s.rootdomain,
      full_domain: s.fullDomain,
      status: statusOf(s, clock.now()),
      created_at: iso(s.createdAt),
      updated_at: iso(s.updatedAt),
      expires_at: s.expiresAt ? iso(s.expiresAt) : null,
      never_expires: s.neverExpires,
    }
  }

  /** The account row was read by authentication a moment ago, in this request; only the count is new. */
  async function quotaOf(p: Principal) {
    const used = await repo.countSubdomains(p.accountId)
    const total = p.account.quotaTotal
    return { used, total, available: Math.max(0, total - used) }
  }

  async function ownSubdomain(p: Principal, id: number): Promise<SubdomainRow> {
    const s = await repo.getSubdomain(p.accountId, id)
    if (!s) throw new ApiError('subdomain_not_found', `no subdomain ${id} on this account`)
    return s
  }

  function providerFailure(err: unknown): ApiError {
    deps.logger.warn({ err }, 'provider operation failed')
    return new ApiError(
      'provider_operation_failed',
      'the upstream DNS provider refused or did not answer',
      undefined,
      {
        cause: err,
      },
    )
  }

  /** Desired RRsets (from the database) → one upstream call for the subdomain's zone. */
  function pushTo(s: SubdomainRow) {
    return async (desired: Map<string, RecordRow[]>) => {
      const rrsets: RRset[] = [...desired.entries()].map(([key, rows]) => {
        const [name, type] = key.split(' ') as [string, RecordType]
        return {
          name: fqdnOf(name, s.fullDomain),
          type,
          ttl: rows.length ? Math.min(...rows.map((r) => r.ttl)) : TTL_DEFAULT,
          records: rows.map((r) => rdataOf(asValues(r))),
        }
      })
      await provider.applyRRsets(s.rootdomain, rrsets)
    }
  }

  /** Pending → upstream → confirm, or roll back and answer 502. */
  async function writeRecord(
    p: Principal,
    subdomainId: number,
    plan: Parameters<Repository['beginRecordChange']>[3],
  ): Promise<RecordRow> {
    const begun = await repo.beginRecordChange(p.accountId, subdomainId, clock.now(), plan)
    if (!begun) throw new ApiError('subdomain_not_found', `no subdomain ${subdomainId} on this account`)
    const ids = [begun.record.id]
    try {
      await repo.pushAndSettle(
        subdomainId,
        ids,
        begun.touched,
        pushTo(begun.subdomain),
        'confirm',
        settings.providerTimeoutMs,
      )
    } catch (err) {
      await repo.rollbackRecords(ids)
      if (err instanceof ProviderError) throw providerFailure(err)
      throw err
    }
    return begun.record
  }

  function planChecks(s: SubdomainRow, records: RecordRow[], values: RecordValues, selfId?: number) {
    const others = records.filter((r) => r.id !== selfId && r.state !== 'pending_delete')
    checkCnameRules(values, others)
    const rdata = rdataOf(values)
    if (
      others.some((r) => r.name === values.name && r.type === values.type && rdataOf(asValues(r)) === rdata)
    )
      throw new ApiError('bad_request', 'content: the same record already exists', { field: 'content' })
    if (fqdnOf(values.name, s.fullDomain).length > MAX_NAME_LENGTH)
      throw new ApiError('bad_request', 'name: the full name is too long', { field: 'name' })
  }

  function findMutable(records: RecordRow[], id: number): RecordRow {
    const r = records.find((x) => x.id === id)
    if (!r || r.state === 'pending_create')
      throw new ApiError('dns_record_not_found', `no DNS record ${id} here`)
    if (r.state !== 'active')
      throw new ApiError('conflict', `DNS record ${id} has a change in progress; retry in a moment`)
    return r
  }

  return {
    settings,
    // --- auth pipeline --------------------------------------------------------------------------
    /**
     * Steps 1–3 of the pipeline: credentials (with the budgets of failed secrets), the API
     * switch, the IP allow list.
     */
    async authenticate(
      credentials: { key: string; secret: string } | null,
      ip: string | undefined,
    ): Promise<Principal> {
      if (!credentials) throw new ApiError('auth_invalid_credentials', 'API key and secret are required')
      // An address past its budget of failures is refused before the database is asked.
      const attempt = await guard.admit(ip)
      const found = await repo.findCredential(credentials.key)
      // Hash and compare even for an unknown key, so timing does not tell which keys exist.
      const expected = found?.credential.secretHash ?? hashToken('no such key')
      if (!safeEqual(hashToken(credentials.secret), expected) || !found)
        return guard.failed(attempt, found?.credential.id ?? null)
      await guard.succeeded(attempt, found.credential.id)
      if (!found.account.apiAccessEnabled)
        throw new ApiError('api_access_disabled', 'API access is disabled for this account')
      if (!ipAllowed(ip, found.account.ipAllowList))
        throw new ApiError(
          'auth_ip_not_allowed',
          `requests from ${ip ?? 'this address'} are not on the allow list`,
        )
      // last_used_at is kept to the minute: one write per credential per minute, not per request.
      const now = clock.now()
      if (!found.credential.lastUsedAt || now.getTime() - found.credential.lastUsedAt.getTime() > 60_000)
        void repo.touchCredential(found.credential.id, now).catch(() => {})
      return {
        accountId: found.account.id,
        credentialId: found.credential.id,
        apiKey: found.credential.publicKey,
        ip,
        account: { quotaTotal: found.account.quotaTotal, balanceCents: found.account.balanceCents },
      }
    },

    async verify(p: Principal) {
      return { account: { api_key: p.apiKey, quota: await quotaOf(p) } }
    },
    async quota(p: Principal) {
      return { quota: await quotaOf(p), balance_cents: p.account.balanceCents }
    },

    // --- subdomains -------------------------------------------------------------------------------
    async listSubdomains(
      p: Principal,
      input: Page & { rootdomain?: string | undefined; search?: string | undefined },
    ) {
      const limit = input.per_page ?? PER_PAGE_DEFAULT
      const rows = await repo.listSubdomains(p.accountId, {
        afterId: afterId(input.cursor),
        limit: limit + 1,
        rootdomain: input.rootdomain?.toLowerCase(),
        search: input.search?.toLowerCase(),
      })
      const page = rows.slice(0, limit)
      return {
        subdomains: page.map(subdomainView),
        next_cursor: rows.length > limit ? cursorOf(page.at(-1)?.id) : null,
      }
    },
    async getSubdomain(p: Principal, input: { id: number }) {
      return { subdomain: subdomainView(await ownSubdomain(p, input.id)) }
    },
    async createSubdomain(p: Principal, input: { subdomain: string; rootdomain: string }) {
      const label = normaliseLabel(input.subdomain)
      if (settings.reservedLabels.includes(label))
        throw new ApiError('bad_request', `subdomain: ${label} is reserved`, {
          field: 'subdomain',
          reserved: true,
        })
      const zone = await repo.findZone(input.rootdomain.trim().toLowerCase().replace(/\.$/, ''))
      if (!zone)
        throw new ApiError('bad_request', `rootdomain: ${input.rootdomain} is not offered here`, {
          field: 'rootdomain',
        })
      const fullDomain = `${label}.${zone.name}`
      if (fullDomain.length > MAX_NAME_LENGTH)
        throw new ApiError(
          'bad_request',
          `subdomain: the full name must be at most ${MAX_NAME_LENGTH} characters`,
          {
            field: 'subdomain',
          },
        )
      const neverExpires = zone.termYears === 0
      const result = await repo.createSubdomain({
        accountId: p.accountId,
        zone,
        label,
        fullDomain,
        neverExpires,
        expiresAt: neverExpires ? null : addYears(clock.now(), zone.termYears),
      })
      if (result.ok) return { subdomain: subdomainView(result.subdomain) }
      switch (result.reason) {
        case 'quota':
          throw new ApiError('quota_exceeded', `the subdomain quota of ${result.total} is used up`, {
            used: result.used,
            total: result.total,
            available: 0,
          })
        case 'balance':
          throw new ApiError('insufficient_balance', 'the balance does not cover the zone price', {
            balance: result.balance,
            required: result.required,
          })
        case 'taken':
          throw new ApiError('subdomain_taken', `${fullDomain} is already registered`, {
            full_domain: fullDomain,
          })
      }
    },
    async renewSubdomain(p: Principal, input: { id: number }) {
      const now = clock.now()
      const renewed = await repo.renewSubdomain(
        p.accountId,
        input.id,
        (s: SubdomainRow, zone: ZoneRow) => {
          if (s.neverExpires || !s.expiresAt)
            throw new ApiError('bad_request', `${s.fullDomain} never expires and needs no renewal`, {
              field: 'id',
            })
          const opens = new Date(s.expiresAt.getTime() - windowMs)
          if (now < opens)
            throw new ApiError('renewal_not_yet_available', `renewal opens ${iso(opens)}`, {
              window_opens_at: iso(opens),
              seconds_until_window: Math.ceil((opens.getTime() - now.getTime()) / 1000),
            })
          const graceEnds = new Date(s.expiresAt.getTime() + graceMs)
          if (now >= graceEnds)
            throw new ApiError('renewal_window_expired', `the grace period ended ${iso(graceEnds)}`, {
              grace_ended_at: iso(graceEnds),
            })
          const from = s.expiresAt > now ? s.expiresAt : now
          return { expiresAt: addYears(from, zone.termYears), priceCents: zone.priceCents }
        },
        (balance, required) =>
          new ApiError('insufficient_balance', 'the balance does not cover the renewal', {
            balance,
            required,
          }),
      )
      if (!renewed) throw new ApiError('subdomain_not_found', `no subdomain ${input.id} on this account`)
      return {
        subdomain: subdomainView(renewed.subdomain),
        charged_cents: renewed.charged,
        balance_cents: renewed.balance,
      }
    },
    async deleteSubdomain(p: Principal, input: { id: number }) {
      const s = await ownSubdomain(p, input.id)
      await releaseSubdomain(s)
      return { deleted: true as const, id: s.id }
    },
    async exportZone(p: Principal, input: { id: number }) {
      const s = await ownSubdomain(p, input.id)
      const records = (await repo.listRecords(s.id))
        .map((r) =>
          r.state === 'pending_create' ? null : r.state === 'pending_update' && r.previous ? r.previous : r,
        )
        .filter((r): r is RecordFields => r !== null)
        .map(asValues)
      const now = clock.now()
      const serial = Math.floor(s.updatedAt.getTime() / 1000)
      return {
        zone: bindZoneFile(s.fullDomain, records, { nameservers: settings.nameservers, serial }),
        generated_at: iso(now),
      }
    },

    // --- records --------------------------------------------------------------------------------
    async listRecords(
      p: Principal,
      input: Page & { subdomain_id: number; type?: RecordType | undefined; name?: string | undefined },
    ) {
      await ownSubdomain(p, input.subdomain_id)
      const limit = input.per_page ?? PER_PAGE_DEFAULT
      const rows = (await repo.listRecords(input.subdomain_id, { afterId: afterId(input.cursor) }))
        .map(confirmedView)
        .filter((r): r is RecordView => r !== null)
        .filter(
          (r) =>
            (!input.type || r.type === input.type) && (!input.name || r.name === input.name.toLowerCase()),
        )
      const page = rows.slice(0, limit)
      return { dns_records: page, next_cursor: rows.length > limit ? cursorOf(page.at(-1)?.id) : null }
    },
    async getRecord(p: Principal, input: { subdomain_id: number; id: number }) {
      await ownSubdomain(p, input.subdomain_id)
      const r = await repo.getRecord(input.subdomain_id, input.id)
      const view = r && confirmedView(r)
      if (!view)
        throw new ApiError(
          'dns_record_not_found',
          `no DNS record ${input.id} on subdomain ${input.subdomain_id}`,
        )
      return { dns_record: view }
    },
    async createRecord(p: Principal, input: RecordInput & { subdomain_id: number }) {
      const { subdomain_id, ...record } = input
      const row = await writeRecord(p, subdomain_id, (s, records) => {
        if (records.length >= settings.maxRecordsPerSubdomain)
          throw new ApiError(
            'bad_request',
            `a subdomain holds at most ${settings.maxRecordsPerSubdomain} records`,
            {
              field: 'subdomain_id',
              limit: settings.maxRecordsPerSubdomain,
            },
          )
        const values = validateRecord(record, s.fullDomain, {
          allowPrivateAddresses: settings.allowPrivateAddresses,
        })
        planChecks(s, records, values)
        return { op: 'create', values }
      })
      return this.getRecord(p, { subdomain_id, id: row.id })
    },
    async updateRecord(p: Principal, input: RecordPatch & { subdomain_id: number; id: number }) {
      const { subdomain_id, id, ...patch } = input
      await writeRecord(p, subdomain_id, (s, records) => {
        const current = findMutable(records, id)
        const merged: RecordInput = {
          name: patch.name ?? current.name,
          type: patch.type ?? (current.type as RecordType),
          content: patch.content ?? current.content,
          ttl: patch.ttl ?? current.ttl,
          priority: patch.priority ?? current.priority ?? undefined,
          weight: patch.weight ?? current.weight ?? undefined,
          port: patch.port ?? current.port ?? undefined,
          flag: patch.flag ?? current.flag ?? undefined,
          tag: patch.tag ?? current.tag ?? undefined,
        }
        const values = validateRecord(merged, s.fullDomain, {
          allowPrivateAddresses: settings.allowPrivateAddresses,
        })
        planChecks(s, records, values, id)
        return { op: 'update', id, values }
      })
      return this.getRecord(p, { subdomain_id, id })
    },
    async deleteRecord(p: Principal, input: { subdomain_id: number; id: number }) {
      await writeRecord(p, input.subdomain_id, (_s, records) => {
        findMutable(records, input.id)
        return { op: 'delete', id: input.id }
      })
      return { deleted: true as const, id: input.id }
    },

    // --- whois and system -------------------------------------------------------------------------
    async whois(_p: Principal, input: { domain: string }) {
      const domain = normaliseHostname(input.domain, 'domain')
      const zones = await repo.listZones()
      const zone = zones.find(
        (z) => domain.endsWith(`.${z.name}`) && !domain.slice(0, -(z.name.length + 1)).includes('.'),
      )
      if (!zone) throw new ApiError('not_found', `${domain} is not under a zone offered here`)
      const label = domain.slice(0, -(zone.name.length + 1))
      const base = { domain, rootdomain: zone.name }
      if (settings.reservedLabels.includes(label))
        return { whois: { ...base, status: 'reserved', created_at: null, expires_at: null, nameservers: [] } }
      const s = await repo.findSubdomainByName(domain)
      if (!s)
        return {
          whois: { ...base, status: 'available', created_at: null, expires_at: null, nameservers: [] },
        }
      const ns = (await repo.listRecords(s.id))
        .filter((r) => r.state === 'active' && r.type === 'NS' && r.name === '@')
        .map((r) => r.content)
      return {
        whois: {
          ...base,
          status: statusOf(s, clock.now()) === 'grace' ? 'grace' : 'registered',
          created_at: iso(s.createdAt),
          expires_at: s.expiresAt ? iso(s.expiresAt) : null,
          nameservers: ns.length ? ns : [...settings.nameservers],
        },
      }
    },
    async systemInfo() {
      const zones = await repo.listZones()
      let database: 'ok' | 'unreachable' = 'ok'
      try {
        await repo.ping()
      } catch {
        database = 'unreachable'
      }
      return {
        system: {
          version: VERSION,
          provider: provider.kind,
          zones: zones.map((z) => ({
            name: z.name,
            price_cents: z.priceCents,
            term_years: z.termYears,
            never_expires: z.termYears === 0,
          })),
          limits: {
            rate_limit_per_minute: settings.rateLimitPerMinute,
            rpc_max_batch: settings.rpcMaxBatch,
            ttl_min: TTL_MIN,
            ttl_max: TTL_MAX,
            ttl_default: TTL_DEFAULT,
            record_types: [...RECORD_TYPES],
            max_records_per_subdomain: settings.maxRecordsPerSubdomain,
            max_api_keys: settings.maxApiKeys,
            per_page_max: PER_PAGE_MAX,
            renew_window_days: settings.renewWindowDays,
            grace_days: settings.graceDays,
          },
          health: { database },
        },
      }
    },

    // --- API keys ---------------------------------------------------------------------------------
    newCredential: () => issueCredential(settings.apiKeyPrefix),
    async listKeys(p: Principal) {
      const keys = await repo.listCredentials(p.accountId)
      return {
        keys: keys.map((k) => ({
          id: k.id,
          api_key: k.publicKey,
          created_at: iso(k.createdAt),
          last_used_at: k.lastUsedAt ? iso(k.lastUsedAt) : null,
          current: k.id === p.credentialId,
        })),
      }
    },
    async createKey(p: Principal) {
      const c = this.newCredential()
      const row = await repo.addCredentialWithinLimit(p.accountId, c.stored, settings.maxApiKeys)
      if (row === 'limit')
        throw new ApiError('key_limit_reached', `an account holds at most ${settings.maxApiKeys} API keys`, {
          limit: settings.maxApiKeys,
        })
      return {
        key: { id: row.id, api_key: c.apiKey, api_secret: c.apiSecret, created_at: iso(row.createdAt) },
      }
    },
    async deleteKey(p: Principal, input: { id: string }) {
      if (!(await repo.deleteCredential(p.accountId, input.id)))
        throw new ApiError('not_found', `no API key ${input.id} on this account`)
      return { deleted: true as const, id: input.id }
    },
    async regenerateKey(p: Principal, input: { id: string }) {
      const c = this.newCredential()
      const row = await repo.replaceCredentialSecret(p.accountId, input.id, c.stored.secretHash)
      if (!row) throw new ApiError('not_found', `no API key ${input.id} on this account`)
      return {
        key: { id: row.id, api_key: row.publicKey, api_secret: c.apiSecret, created_at: iso(row.createdAt) },
      }
    },

    // --- jobs ---------------------------------------------------------------------------------------
    /** Releases subdomains whose grace period is over: records removed upstream first, then the rows. */
    async sweepExpired(): Promise<{ released: string[]; failed: string[] }> {
      const released: string[] = []
      const failed: string[] = []
      for (const s of await repo.expiredBefore(new Date(clock.now().getTime() - graceMs))) {
        try {
          await releaseSubdomain(s)
          await repo.audit({
            accountId: s.accountId,
            credentialId: null,
            ip: null,
            operation: 'sweeper.release',
            target: s.fullDomain,
            outcome: 'ok',
          })
          released.push(s.fullDomain)
        } catch (err) {
          deps.logger.warn({ err, subdomain: s.fullDomain }, 'sweeper could not release a subdomain')
          failed.push(s.fullDomain)
        }
      }
      return { released, failed }
    },
    /** Rolls back record writes left pending by a crash, and makes the upstream match the database again. */
    async reconcilePending(): Promise<{ rolled_back: number[]; failed: number[] }> {
      const stale = await repo.stalePending(new Date(clock.now().getTime() - settings.pendingTimeoutMs))
      const bySubdomain = new Map<number, RecordRow[]>()
      for (const r of stale) bySubdomain.set(r.subdomainId, [...(bySubdomain.get(r.subdomainId) ?? []), r])
      const rolledBack: number[] = []
      const failed: number[] = []
      for (const [subdomainId, rows] of bySubdomain) {
        const ids = rows.map((r) => r.id)
        const s = await repo.getSubdomain(null, subdomainId)
        if (!s) continue
        const touched = rows.flatMap((r) => [
          { name: r.name, type: r.type },
          ...(r.previous ? [{ name: r.previous.name, type: r.previous.type }] : []),
        ])
        try {
          await repo.pushAndSettle(
            subdomainId,
            ids,
            touched,
            pushTo(s),
            'rollback',
            settings.providerTimeoutMs,
          )
          rolledBack.push(...ids)
        } catch (err) {
          deps.logger.warn({ err, subdomainId }, 'reconcile could not reach the provider; will retry')
          failed.push(...ids)
        }
      }
      return { rolled_back: rolledBack, failed }
    },
  }

  async function releaseSubdomain(s: SubdomainRow): Promise<void> {
    const records = await repo.listRecords(s.id)
    const keys = new Map<string, RRset>()
    for (const r of records) {
      for (const f of [r, ...(r.previous ? [r.previous] : [])])
        keys.set(`${f.name} ${f.type}`, {
          name: fqdnOf(f.name, s.fullDomain),
          type: f.type as RecordType,
          ttl: TTL_DEFAULT,
          records: [],
        })
    }
    try {
      await provider.applyRRsets(s.rootdomain, [...keys.values()])
    } catch (err) {
      if (err instanceof ProviderError) throw providerFailure(err)
      throw err
    }
    await repo.deleteSubdomain(s.id)
  }
}

export type DnsService = ReturnType<typeof createDnsService>
