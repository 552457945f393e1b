import { ApiError } from '@quartet/core/errors'
import { quoteIdent, rawAccessOf } from '@quartet/core/db'
import '../domain/errors.ts'
import type { CompressedBody } from '../domain/compression.ts'
import type { PublishedRelease, ReleaseRepository, ReleaseSummary, StoredRelease } from '../domain/ports.ts'
import type { Db } from './db.ts'

const isUniqueViolation = (err: unknown) => (err as { code?: unknown })?.code === 'P2002'

/** Releases and their documents in Postgres. Plain objects out; Prisma stays in here. */
export function createReleaseRepository(db: Db, schema: string): ReleaseRepository {
  // Writers that change which release is active take this lock first, so two concurrent
  // publishes/activations run one after the other and the partial unique index never trips.
  const lockReleases = `LOCK TABLE ${quoteIdent(schema)}."release" IN SHARE ROW EXCLUSIVE MODE`
  // What a running service asks (count at start, the active version every poll, a release's
  // documents) goes to the pg pool in plain SQL: through Prisma, the first of them loaded and
  // compiled its query compiler (WebAssembly) in every process, though only publishing and the
  // CLI need Prisma.
  const table = (name: string) => `${quoteIdent(schema)}.${quoteIdent(name)}`
  const query = <Row extends object>(text: string, values: unknown[] = []) => {
    const access = rawAccessOf(db)
    if (!access) throw new Error('release repository: the client was not made by createPrismaClient')
    return access.pool.query<Row>(text, values)
  }

  return {
    async insert(release: PublishedRelease, options: { activate: boolean }): Promise<void> {
      try {
        await db.$transaction(async (tx) => {
          await tx.$executeRawUnsafe(lockReleases)
          if (options.activate)
            await tx.release.updateMany({ where: { active: true }, data: { active: false } })
          await tx.release.create({
            data: {
              version: release.version,
              publishedAt: release.publishedAt,
              active: options.activate,
              documents: {
                create: release.documents.map((d) => ({
                  name: d.name,
                  body: new Uint8Array(d.body),
                  bodyGzip: new Uint8Array(d.gzip),
                  bodyBr: new Uint8Array(d.br),
                  sha256: d.sha256,
                  bytes: d.bytes,
                  items: d.items,
                  schemaVersion: d.schemaVersion,
                })),
              },
            },
          })
        })
      } catch (err) {
        if (isUniqueViolation(err))
          throw new ApiError('release_exists', `release ${JSON.stringify(release.version)} already exists`)
        throw err
      }
    },

    async activate(version: string): Promise<boolean> {
      return db.$transaction(async (tx) => {
        await tx.$executeRawUnsafe(lockReleases)
        const target = await tx.release.findUnique({ where: { version }, select: { id: true } })
        if (!target) return false
        await tx.release.updateMany({
          where: { active: true, NOT: { id: target.id } },
          data: { active: false },
        })
        await tx.release.update({ where: { id: target.id }, data: { active: true } })
        return true
      })
    },

    async list(): Promise<ReleaseSummary[]> {
      const rows = await db.release.findMany({
        orderBy: { id: 'desc' },
        include: {
          documents: {
            select: { name: true, sha256: true, bytes: true, items: true, schemaVersion: true },
            orderBy: { name: 'asc' },
          },
        },
      })
      return rows.map((r) => ({
        version: r.version,
        publishedAt: r.publishedAt,
        active: r.active,
        documents: r.documents,
      }))
    },

    async activeVersion(): Promise<string | null> {
      const { rows } = await query<{ version: string }>(
        `SELECT version FROM ${table('release')} WHERE active LIMIT 1`,
      )
      return rows[0]?.version ?? null
    },

    async load(version: string): Promise<StoredRelease | null> {
      const found = await query<{ id: number; version: string; published_at: Date }>(
        `SELECT id, version, published_at FROM ${table('release')} WHERE version = $1`,
        [version],
      )
      const release = found.rows[0]
      const documents = release
        ? (
            await query<{
              name: string
              body: Buffer
              sha256: string
              body_gzip: Buffer | null
              body_br: Buffer | null
            }>(
              `SELECT name, body, sha256, body_gzip, body_br FROM ${table('release_document')} WHERE release_id = $1`,
              [release.id],
            )
          ).rows
        : []
      const row = release && {
        version: release.version,
        publishedAt: release.published_at,
        documents: documents.map((d) => ({
          name: d.name,
          body: d.body,
          sha256: d.sha256,
          bodyGzip: d.body_gzip,
          bodyBr: d.body_br,
        })),
      }
      if (!row) return null
      return {
        version: row.version,
        publishedAt: row.publishedAt,
        documents: row.documents.map((d) => ({
          name: d.name,
          body: Buffer.from(d.body),
          sha256: d.sha256,
          ...(d.bodyGzip && d.bodyBr ? { gzip: Buffer.from(d.bodyGzip), br: Buffer.from(d.bodyBr) } : {}),
        })),
      }
    },

    async storeCompressed(version: string, documents: Array<{ name: string } & CompressedBody>) {
      const release = await db.release.findUnique({ where: { version }, select: { id: true } })
      if (!release) return
      for (const d of documents)
        await db.releaseDocument.updateMany({
          where: { releaseId: release.id, name: d.name, bodyGzip: null },
          data: { bodyGzip: new Uint8Array(d.gzip), bodyBr: new Uint8Array(d.br) },
        })
    },

    count: async () => {
      const { rows } = await query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table('release')}`)
      return rows[0]!.n
    },
  }
}
