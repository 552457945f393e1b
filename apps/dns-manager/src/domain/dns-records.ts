import { ApiError } from '@quartet/core/errors'
import type { Principal } from './principal.ts'
import { type DomainDeps, PER_PAGE_DEFAULT } from './deps.ts'
import { checkAcmeScope } from './acme-scope.ts'
import { fqdnOf, MAX_NAME_LENGTH, normaliseRecordName } from './names.ts'
import type { RecordChange, RecordRow, SubdomainRow } from './ports.ts'
import {
  checkCnameRules,
  checkDelegationRules,
  checkTargetRules,
  type RecordInput,
  type RecordType,
  type RecordValues,
  validateRecord,
} from './record-rules.ts'
import { rdataOf } from './zone-file.ts'
import { ownSubdomain, subdomainNotFound } from './subdomains.ts'
import { type SyncDeps, writeRecord } from './sync.ts'
import { afterId, asValues, confirmedView, cursorOf, type Page, type RecordView } from './views.ts'

export type RecordPatch = Partial<Omit<RecordInput, 'type'>> & { type?: RecordType | undefined }

type ReadDeps = Pick<DomainDeps, 'subdomains' | 'records'>
type WriteDeps = SyncDeps

/** What a new or changed record must not break among the subdomain's other records. */
function planChecks(s: SubdomainRow, records: RecordRow[], values: RecordValues, selfId?: number) {
  const others = records.filter((r) => r.id !== selfId && r.state !== 'pending_delete')
  checkCnameRules(values, others)
  checkTargetRules(values, others, s.fullDomain)
  checkDelegationRules([...others, values], values, s.fullDomain)
  const rdata = rdataOf(values)
  if (others.some((r) => r.name === values.name && r.type === values.type && rdataOf(asValues(r)) === rdata))
    throw new ApiError('bad_request', 'content: the same record already exists', { field: 'content' })
  if (fqdnOf(values.name, s.fullDomain).length > MAX_NAME_LENGTH)
    throw new ApiError('bad_request', 'name: the full name is too long', { field: 'name' })
}

/**
 * One TTL per RRset (RFC 2181 §5.2): a TTL given for a record is the TTL of its whole RRset, so
 * the other records of that name and type take it in the same write (and roll back with it);
 * without one, a record joins its RRset's TTL (a new RRset: its own, or the default). Returns the
 * TTL and the other records whose TTL changes.
 */
function rrsetTtl(
  records: RecordRow[],
  values: RecordValues,
  given: number | undefined,
  selfId?: number,
): { ttl: number; siblings: number[] } {
  const siblings = records.filter(
    (r) =>
      r.id !== selfId && r.state !== 'pending_delete' && r.name === values.name && r.type === values.type,
  )
  const ttl = given ?? siblings[0]?.ttl ?? values.ttl
  const changing = siblings.filter((r) => r.ttl !== ttl)
  const busy = changing.find((r) => r.state !== 'active')
  if (busy)
    throw new ApiError(
      'conflict',
      `the ${values.name} ${values.type} RRset has a change in progress (record ${busy.id}); retry in a moment`,
    )
  return { ttl, siblings: changing.map((r) => r.id) }
}

function findMutable(records: RecordRow[], id: number): RecordRow {
  const r = records.find((x) => x.id === id)
  if (!r || r.state === 'pending_create')
    throw new ApiError('dns_record_not_found', `no DNS record ${id} here`)
  if (r.state !== 'active')
    throw new ApiError('conflict', `DNS record ${id} has a change in progress; retry in a moment`)
  return r
}

/** A page of a subdomain's records; kept in the views cache until a write. */
export function listRecords(
  deps: ReadDeps & Pick<DomainDeps, 'views'>,
  p: Principal,
  input: Page & { subdomain_id: number; type?: RecordType | undefined; name?: string | undefined },
) {
  const limit = input.per_page ?? PER_PAGE_DEFAULT
  const after = afterId(input.cursor)
  const name = input.name?.toLowerCase()
  const key = `records ${input.subdomain_id} ${after} ${limit} ${JSON.stringify([input.type, name])}`
  return deps.views.read(p.accountId, p.viewToken ?? null, key, async () => {
    const own = await deps.records.listOwnRecords(p.accountId, input.subdomain_id, after)
    if (!own) throw subdomainNotFound(input.subdomain_id)
    const rows = own
      .map(confirmedView)
      .filter((r): r is RecordView => r !== null)
      .filter((r) => (!input.type || r.type === input.type) && (!name || r.name === name))
    const page = rows.slice(0, limit)
    return {
      value: { dns_records: page, next_cursor: rows.length > limit ? cursorOf(page.at(-1)?.id) : null },
    }
  })
}

export async function getRecord(deps: ReadDeps, p: Principal, input: { subdomain_id: number; id: number }) {
  await ownSubdomain(deps, p, input.subdomain_id)
  const r = await deps.records.getRecord(input.subdomain_id, input.id)
  const view = r && confirmedView(r)
  if (!view)
    throw new ApiError('dns_record_not_found', `no DNS record ${input.id} on subdomain ${input.subdomain_id}`)
  return { dns_record: view }
}

/**
 * The change that adds a record to a subdomain, decided under its lock: the record quota, the
 * per-type validation, the rules among the other records, and the RRset's TTL.
 */
export function planCreate(
  settings: WriteDeps['settings'],
  s: SubdomainRow,
  records: RecordRow[],
  record: RecordInput,
): RecordChange {
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
  const { ttl, siblings } = rrsetTtl(records, values, record.ttl)
  return { op: 'create', values: { ...values, ttl }, rrsetTtl: { ttl, siblings } }
}

export async function createRecord(
  deps: WriteDeps,
  p: Principal,
  input: RecordInput & { subdomain_id: number },
) {
  const { subdomain_id, ...record } = input
  const row = await writeRecord(deps, p, subdomain_id, (s, records) => {
    checkAcmeScope(p, s, { type: record.type, name: normaliseRecordName(record.name ?? '@', s.fullDomain) })
    return planCreate(deps.settings, s, records, record)
  })
  return getRecord(deps, p, { subdomain_id, id: row.id })
}

export async function updateRecord(
  deps: WriteDeps,
  p: Principal,
  input: RecordPatch & { subdomain_id: number; id: number },
) {
  const { subdomain_id, id, ...patch } = input
  await writeRecord(deps, p, subdomain_id, (s, records) => {
    const current = findMutable(records, id)
    checkAcmeScope(p, s, current)
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
      allowPrivateAddresses: deps.settings.allowPrivateAddresses,
    })
    checkAcmeScope(p, s, values)
    planChecks(s, records, values, id)
    // Moving to another name or type without a TTL joins the TTL of the RRset it moves into.
    const moved = values.name !== current.name || values.type !== current.type
    const { ttl, siblings } = rrsetTtl(records, values, patch.ttl ?? (moved ? undefined : current.ttl), id)
    return { op: 'update', id, values: { ...values, ttl }, rrsetTtl: { ttl, siblings } }
  })
  return getRecord(deps, p, { subdomain_id, id })
}

export async function deleteRecord(
  deps: WriteDeps,
  p: Principal,
  input: { subdomain_id: number; id: number },
) {
  await writeRecord(deps, p, input.subdomain_id, (s, records) => {
    checkAcmeScope(p, s, findMutable(records, input.id))
    return { op: 'delete', id: input.id }
  })
  return { deleted: true as const, id: input.id }
}
