import { writeFileSync } from 'node:fs'
import path from 'node:path'
import { brotliDecompressSync, gunzipSync } from 'node:zlib'
import { fixedClock, systemClock } from '@quartet/core/clock'
import { quoteIdent } from '@quartet/core/db'
import { ApiError } from '@quartet/core/errors'
import { request, silentLogger, useTestDeps } from '@quartet/core/testing'
import { createApp } from '../../src/app.ts'
import { ReleaseCache } from '../../src/domain/release-cache.ts'
import {
  activateRelease,
  listReleases,
  publishContent,
  seedBundledContent,
} from '../../src/domain/releases.ts'
import type { ReleaseRepository } from '../../src/domain/ports.ts'
import { createDb } from '../../src/store/db.ts'
import { createReleaseRepository } from '../../src/store/release-repository.ts'
import { contentDir, copyOfContent, editDocument, eventually, migrationsDir, validator } from '../helpers.ts'

const deps = useTestDeps({ migrationsDir, prefix: 'design_rel', createDb })
let repository: ReleaseRepository
let seq = 0
const uniqueVersion = (label: string) => `${label}-${++seq}-${Math.random().toString(36).slice(2, 8)}`

beforeAll(async () => {
  repository = createReleaseRepository(deps.db, deps.database.schema)
})

const publish = (dir: string, version: string, activate = true) =>
  publishContent({ releases: repository, validator, clock: systemClock }, { dir, version, activate })

async function rejection(promise: Promise<unknown>): Promise<ApiError> {
  try {
    await promise
  } catch (err) {
    if (err instanceof ApiError) return err
    throw err
  }
  throw new Error('expected a rejection')
}

const appServing = (releases: ReleaseCache) =>
  createApp({
    config: { TRUST_PROXY: ['loopback'] },
    logger: silentLogger(),
    db: deps.db,
    kv: deps.kv,
    releases,
  })

describe('publishing', () => {
  let baseline: string
  beforeAll(async () => {
    baseline = uniqueVersion('base')
    await publish(contentDir, baseline)
  })

  const expectNothingChanged = async (attempted: string) => {
    expect(await repository.activeVersion()).toBe(baseline)
    expect((await listReleases(repository)).map((r) => r.version)).not.toContain(attempted)
  }

  it('when a document breaks its schema, then the publish is refused naming document and pointer, and nothing changes', async () => {
    const dir = copyOfContent()
    editDocument(dir, 'terms.json', (doc) => {
      const terms = doc.terms as Array<Record<string, unknown>>
      delete terms[3]!.zh
      terms[5]!.pos = 'gerund'
    })
    const version = uniqueVersion('bad-schema')
    const err = await rejection(publish(dir, version))
    expect(err.code).toBe('content_invalid')
    expect(err.message).toContain("terms.json /terms/3: must have required property 'zh'")
    expect(err.message).toContain('terms.json /terms/5/pos: must be one of "noun"')
    expect(err.details?.problems).toHaveLength(2)
    await expectNothingChanged(version)
  })

  it('when a learning path cites a missing id, then the publish is refused naming the citation', async () => {
    const dir = copyOfContent()
    editDocument(dir, 'learning-paths.json', (doc) => {
      const paths = doc.paths as Array<{ steps: Array<{ cites: Array<{ kind: string; id: string }> }> }>
      paths[0]!.steps[1]!.cites.push({ kind: 'quality-gate', id: 'no-such-gate' })
    })
    const version = uniqueVersion('bad-ref')
    const err = await rejection(publish(dir, version))
    expect(err.code).toBe('content_invalid')
    expect(err.message).toMatch(
      /learning-paths\.json \/paths\/0\/steps\/1\/cites\/\d+\/id: cites quality-gate "no-such-gate", which does not exist/,
    )
    await expectNothingChanged(version)
  })

  it('when a mapping cites a missing term, block or style, then each is reported', async () => {
    const dir = copyOfContent()
    editDocument(dir, 'term-mappings.json', (doc) => {
      ;(doc.synonyms as Array<Record<string, unknown>>)[0]!.preferred = 'log-in-please'
      ;(doc.links as Array<Record<string, unknown>>).push({
        term: 'sign-in',
        blocks: ['ghost-block'],
        styles: ['ghost-style'],
      })
    })
    const err = await rejection(publish(dir, uniqueVersion('bad-map')))
    expect(err.message).toContain('term-mappings.json /synonyms/0/preferred: cites term "log-in-please"')
    expect(err.message).toContain('cites block "ghost-block"')
    expect(err.message).toContain('cites style "ghost-style"')
  })

  it('when ids repeat, a block cites a missing gate or steps are misnumbered, then the publish is refused', async () => {
    const dir = copyOfContent()
    editDocument(dir, 'styles.json', (doc) => {
      const styles = doc.styles as Array<Record<string, unknown>>
      styles.push({ ...styles[0]! })
    })
    editDocument(dir, 'blocks.json', (doc) => {
      ;((doc.blocks as Array<Record<string, unknown>>)[0]!.quality_gates as string[]).push('gate-that-is-not')
    })
    editDocument(dir, 'learning-paths.json', (doc) => {
      ;(doc.paths as Array<{ steps: Array<{ order: number }> }>)[1]!.steps[0]!.order = 7
    })
    const err = await rejection(publish(dir, uniqueVersion('bad-ids')))
    expect(err.message).toContain('duplicate id "swiss-minimal"')
    expect(err.message).toContain('cites quality-gate "gate-that-is-not"')
    expect(err.message).toContain('learning-paths.json /paths/1/steps/0/order: must be 1')
  })

  it('when a file is missing, malformed, or a computed document is supplied, then each is reported', async () => {
    const dir = copyOfContent()
    writeFileSync(path.join(dir, 'styles.json'), '{"schema_version": "1.0.0", ')
    writeFileSync(path.join(dir, 'manifest.json'), '{}')
    const { rmSync } = await import('node:fs')
    rmSync(path.join(dir, 'blocks.json'))
    const err = await rejection(publish(dir, uniqueVersion('bad-files')))
    expect(err.message).toContain('manifest.json /: is computed at publish')
    expect(err.message).toContain('blocks.json /: file is missing')
    expect(err.message).toContain('styles.json /: is not valid JSON')
  })

  it('when fewer than 270 terms are supplied, then the publish is refused', async () => {
    const dir = copyOfContent()
    editDocument(dir, 'terms.json', (doc) => {
      doc.terms = (doc.terms as unknown[]).slice(0, 269)
    })
    const err = await rejection(publish(dir, uniqueVersion('few-terms')))
    expect(err.message).toContain('terms.json /terms: must NOT have fewer than 270 items')
  })

  it('when the version is taken or malformed, then release_exists or bad_request', async () => {
    expect((await rejection(publish(contentDir, baseline))).code).toBe('release_exists')
    expect((await rejection(publish(contentDir, '../etc'))).code).toBe('bad_request')
    expect(await repository.activeVersion()).toBe(baseline)
  })

  it('when published inactive, then it is stored but the active release stays', async () => {
    const version = uniqueVersion('staged')
    const result = await publish(contentDir, version, false)
    expect(result).toMatchObject({ version, active: false })
    expect(result.documents).toHaveLength(9)
    expect(await repository.activeVersion()).toBe(baseline)
    const listed = (await listReleases(repository)).find((r) => r.version === version)
    expect(listed).toMatchObject({ active: false, documents: 9 })
    await activateRelease(repository, baseline)
  })
})

describe('activation, rollback and replicas', () => {
  it('when a new release is activated and then rolled back, then every replica serves each in turn within seconds', async () => {
    const v1 = uniqueVersion('roll-a')
    await publish(contentDir, v1)
    const replicaA = new ReleaseCache(repository)
    const replicaB = new ReleaseCache(repository)
    await Promise.all([replicaA.refresh(), replicaB.refresh()])
    replicaA.start(100)
    replicaB.start(100)
    const apps = [appServing(replicaA), appServing(replicaB)]
    const servedVersions = async () =>
      Promise.all(
        apps.map(
          async (app) => (await request(app).get('/design-api/v1/manifest.json')).body.version as string,
        ),
      )
    try {
      expect(await servedVersions()).toEqual([v1, v1])
      const v1Styles = (await request(apps[0]!).get('/design-api/v1/styles.json')).headers['etag'] as string

      const dir = copyOfContent()
      editDocument(dir, 'styles.json', (doc) => {
        ;(doc.styles as Array<Record<string, unknown>>)[0]!.name = 'Swiss minimal (revised)'
      })
      const v2 = uniqueVersion('roll-b')
      await publishContent(
        { releases: repository, validator, clock: fixedClock(new Date('2026-11-21T10:00:00Z')) },
        { dir, version: v2, activate: true },
      )
      await eventually(async () => (await servedVersions()).every((v) => v === v2))
      const v2Styles = await request(apps[1]!).get('/design-api/v1/styles.json')
      expect(v2Styles.body.styles[0].name).toBe('Swiss minimal (revised)')
      expect(v2Styles.headers['etag']).not.toBe(v1Styles)
      expect(v2Styles.headers['last-modified']).toBe('Sat, 21 Nov 2026 10:00:00 GMT')
      // A client holding v1's ETag now gets the new bytes, not a 304.
      await request(apps[1]!).get('/design-api/v1/styles.json').set('If-None-Match', v1Styles).expect(200)

      await activateRelease(repository, v1)
      await eventually(async () => (await servedVersions()).every((v) => v === v1))
      expect((await request(apps[0]!).get('/design-api/v1/styles.json')).headers['etag']).toBe(v1Styles)
      // The rolled-back-from release stays reachable, pinned.
      const pinned = await request(apps[0]!).get(`/design-api/v1/styles.json?version=${v2}`).expect(200)
      expect(pinned.body.styles[0].name).toBe('Swiss minimal (revised)')
    } finally {
      replicaA.stop()
      replicaB.stop()
    }
  })

  it('when an unknown version is activated, then release_not_found and the active one stays', async () => {
    const before = await repository.activeVersion()
    expect((await rejection(activateRelease(repository, 'never-published'))).code).toBe('release_not_found')
    expect(await repository.activeVersion()).toBe(before)
  })

  it('when releases are published and activated concurrently, then exactly one is active afterwards', async () => {
    const versions = Array.from({ length: 4 }, () => uniqueVersion('race'))
    const outcomes = await Promise.allSettled(versions.map((v) => publish(contentDir, v)))
    expect(outcomes.every((o) => o.status === 'fulfilled')).toBe(true)
    const activeAfterPublish = (await listReleases(repository)).filter((r) => r.active)
    expect(activeAfterPublish).toHaveLength(1)

    await Promise.all(versions.map((v) => activateRelease(repository, v)))
    const active = (await listReleases(repository)).filter((r) => r.active)
    expect(active).toHaveLength(1)
    expect(versions).toContain(active[0]!.version)
  })

  it('when the same version is published concurrently, then exactly one publish wins and the other gets release_exists', async () => {
    const version = uniqueVersion('same')
    const outcomes = await Promise.allSettled([publish(contentDir, version), publish(contentDir, version)])
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1)
    const failed = outcomes.find((o) => o.status === 'rejected') as PromiseRejectedResult
    expect((failed.reason as ApiError).code).toBe('release_exists')
  })
})

describe('compressed bodies', () => {
  it('when a release is published, then its gzip and brotli bodies are stored with it and served as they are', async () => {
    const version = uniqueVersion('packed')
    await publish(contentDir, version, false)
    const stored = (await repository.load(version))!
    expect(stored.documents).toHaveLength(9)
    for (const d of stored.documents) {
      expect(gunzipSync(d.gzip!).equals(d.body)).toBe(true)
      expect(brotliDecompressSync(d.br!).equals(d.body)).toBe(true)
    }
    const served = (await new ReleaseCache(repository).release(version))!
    const terms = stored.documents.find((d) => d.name === 'terms.json')!
    expect(served.documents.get('terms.json')!.br.equals(terms.br!)).toBe(true)
  })

  it('when a release was published before bodies were stored, then it is compressed on load and stored for the next start', async () => {
    const version = uniqueVersion('legacy')
    await publish(contentDir, version, false)
    const table = `${quoteIdent(deps.database.schema)}."release_document"`
    await deps.db.$executeRawUnsafe(
      `UPDATE ${table} SET body_gzip = NULL, body_br = NULL WHERE release_id = (SELECT id FROM ${quoteIdent(deps.database.schema)}."release" WHERE version = $1)`,
      version,
    )
    expect((await repository.load(version))!.documents.every((d) => !d.gzip && !d.br)).toBe(true)

    const served = (await new ReleaseCache(repository).release(version))!
    const terms = served.documents.get('terms.json')!
    expect(brotliDecompressSync(terms.br).equals(terms.raw)).toBe(true)
    await eventually(async () => {
      const again = (await repository.load(version))!
      return again.documents.every((d) => d.gzip && d.br && gunzipSync(d.gzip).equals(d.body))
    })
  })
})

describe('seeding at start-up', () => {
  const fresh = useTestDeps({ migrationsDir, prefix: 'design_seed', createDb })

  it('when no release exists, then the bundled content becomes the active first release, once, even when replicas race', async () => {
    const repo = createReleaseRepository(fresh.db, fresh.database.schema)
    let validatorsMade = 0
    const seedDeps = {
      releases: repo,
      validator: () => {
        validatorsMade++
        return validator
      },
      clock: systemClock,
    }
    const results = await Promise.all([
      seedBundledContent(seedDeps, { dir: contentDir, version: '1.0.0' }),
      seedBundledContent(seedDeps, { dir: contentDir, version: '1.0.0' }),
    ])
    expect(results.filter((r) => r !== null).length).toBeGreaterThanOrEqual(1)
    expect(await listReleases(repo)).toEqual([
      expect.objectContaining({ version: '1.0.0', active: true, documents: 9 }),
    ])
    const before = validatorsMade
    expect(await seedBundledContent(seedDeps, { dir: contentDir, version: '1.0.0' })).toBeNull()
    // A start on a database that has releases does not compile the schemas at all.
    expect(validatorsMade).toBe(before)
  })
})
