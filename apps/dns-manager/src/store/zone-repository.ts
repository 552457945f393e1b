import type { ZoneStore } from '../domain/ports.ts'
import type { Db } from './db.ts'
import { zoneSelect } from './transactions.ts'

export function createZoneRepository(db: Db): ZoneStore {
  return {
    listZones: () => db.rootZone.findMany({ orderBy: { name: 'asc' }, select: zoneSelect }),
    findZone: (name) => db.rootZone.findUnique({ where: { name }, select: zoneSelect }),
    upsertZone: (zone) =>
      db.rootZone.upsert({
        where: { name: zone.name },
        create: zone,
        update: { priceCents: zone.priceCents, termYears: zone.termYears },
        select: zoneSelect,
      }),
  }
}
