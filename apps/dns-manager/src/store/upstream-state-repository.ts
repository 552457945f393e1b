import { quoteIdent } from '@quartet/core/db'
import { fqdnOf, ownerLabelOf } from '../domain/names.ts'
import type { DesiredState, OwnerStamp, RecordRow, UpstreamStateStore } from '../domain/ports.ts'
import type { Db } from './db.ts'
import { toRecord, toSubdomain, withZoneName } from './transactions.ts'

const keyOf = (name: string, type: string) => `${name} ${type}`

export function createUpstreamStateRepository(db: Db, schema: string): UpstreamStateStore {
  async function ownerStamps(zone: string, labels: string[]): Promise<OwnerStamp[]> {
    const unique = [...new Set(labels)]
    const rows = unique.length
      ? await db.subdomain.findMany({
          where: { fullDomain: { in: unique.map((l) => `${l}.${zone}`) } },
          select: { id: true, fullDomain: true, state: true, dnsVersion: true },
        })
      : []
    const byName = new Map(rows.map((r) => [r.fullDomain, r]))
    return unique.sort().map((label) => {
      const r = byName.get(`${label}.${zone}`)
      return r
        ? { label, subdomainId: r.id, state: r.state as OwnerStamp['state'], version: r.dnsVersion }
        : { label, subdomainId: null, state: null, version: 0 }
    })
  }

  return {
    ownerStamps,
    async desiredRRsets(zone, keys) {
      const rrsets = new Map<string, RecordRow[]>(keys.map((k) => [keyOf(k.name, k.type), []]))
      const inFlight = new Set<string>()
      const labels = keys.map((k) => ownerLabelOf(zone, k.name)).filter((l): l is string => l !== null)
      // Versions first, records after: a change between the two reads shows as a newer version
      // after the push, which then pushes again (never the other way round).
      const owners = await ownerStamps(zone, labels)
      const owned = owners.filter((o) => o.subdomainId !== null)
      const records = owned.length
        ? await db.dnsRecord.findMany({
            where: { subdomainId: { in: owned.map((o) => o.subdomainId!) } },
            orderBy: { id: 'asc' },
          })
        : []
      const ownerOf = new Map(owned.map((o) => [o.subdomainId!, o]))
      for (const row of records.map(toRecord)) {
        const owner = ownerOf.get(row.subdomainId)!
        const full = `${owner.label}.${zone}`
        const key = keyOf(fqdnOf(row.name, full), row.type)
        if (row.previous) {
          const before = keyOf(fqdnOf(row.previous.name, full), row.previous.type)
          if (rrsets.has(before) && row.state !== 'active') inFlight.add(before)
        }
        if (!rrsets.has(key)) continue
        if (row.state !== 'active' || owner.state !== 'active') inFlight.add(key)
        if (owner.state !== 'active' || row.state === 'pending_delete') continue
        rrsets.get(key)!.push(row)
      }
      for (const o of owners)
        if (o.state === 'releasing')
          for (const k of rrsets.keys()) if (ownerLabelOf(zone, k.split(' ')[0]!) === o.label) inFlight.add(k)
      return { rrsets, inFlight, owners } satisfies DesiredState
    },
    async zoneSnapshot(zone) {
      const rows = await db.subdomain.findMany({
        where: { rootZone: { name: zone } },
        include: { ...withZoneName, records: { orderBy: { id: 'asc' } } },
        orderBy: { id: 'asc' },
      })
      return rows.map(({ records, ...s }) => ({ subdomain: toSubdomain(s), records: records.map(toRecord) }))
    },
    async addRepairs(zone, given, error) {
      const keys = [...new Map(given.map((k) => [keyOf(k.name, k.type), k])).values()]
      if (keys.length === 0) return
      await db.$executeRawUnsafe(
        `INSERT INTO ${quoteIdent(schema)}."upstream_repair" (root_zone_id, name, type, last_error)
         SELECT z.id, k.name, k.type, $4
           FROM ${quoteIdent(schema)}."root_zone" z, unnest($2::text[], $3::text[]) AS k(name, type)
          WHERE z.name = $1
         ON CONFLICT (root_zone_id, name, type)
         DO UPDATE SET since = now(), next_at = now(), attempts = 0, last_error = EXCLUDED.last_error`,
        zone,
        keys.map((k) => k.name),
        keys.map((k) => k.type),
        error.slice(0, 500),
      )
    },
    async dueRepairs(now, limit) {
      const rows = await db.upstreamRepair.findMany({
        where: { nextAt: { lte: now } },
        orderBy: { nextAt: 'asc' },
        take: limit,
        include: { rootZone: { select: { name: true } } },
      })
      return rows.map((r) => ({
        id: r.id,
        zone: r.rootZone.name,
        name: r.name,
        type: r.type,
        since: r.since,
        attempts: r.attempts,
      }))
    },
    async clearRepair(id, since) {
      await db.upstreamRepair.deleteMany({ where: { id, since: { lte: since } } })
    },
    async deferRepair(id, nextAt, error) {
      await db.upstreamRepair.updateMany({
        where: { id },
        data: {
          nextAt,
          attempts: { increment: 1 },
          ...(error === null ? {} : { lastError: error.slice(0, 500) }),
        },
      })
    },
  }
}
