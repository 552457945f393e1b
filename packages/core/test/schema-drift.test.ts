import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createTestDatabase, type TestDatabase } from '../src/testing.ts'
import { schemaDrift } from '../src/testing-schema-drift.ts'

const SCHEMA = `
datasource db {
  provider = "postgresql"
}

enum Colour {
  red
  green
}

model Widget {
  id        String   @id @db.Uuid
  name      String
  note      String?
  tags      String[]
  colour    Colour   @default(red)
  size      Int      @map("size_px")
  createdAt DateTime @default(now()) @map("created_at") @db.Timestamptz(3)

  @@map("widget")
}
`

function migrationsWith(sql: string): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'drift-'))
  mkdirSync(path.join(dir, '20260101000000_init'))
  writeFileSync(path.join(dir, '20260101000000_init', 'migration.sql'), sql)
  return dir
}

const GOOD_SQL = `
CREATE TYPE "Colour" AS ENUM ('red', 'green');
CREATE TABLE "widget" (
  "id" UUID NOT NULL PRIMARY KEY,
  "name" TEXT NOT NULL,
  "note" TEXT,
  "tags" TEXT[],
  "colour" "Colour" NOT NULL DEFAULT 'red',
  "size_px" INTEGER NOT NULL,
  "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP
);`

describe('schemaDrift', () => {
  const dirs: string[] = []
  const databases: TestDatabase[] = []
  const schemaPrismaPath = path.join(mkdtempSync(path.join(os.tmpdir(), 'drift-schema-')), 'schema.prisma')
  writeFileSync(schemaPrismaPath, SCHEMA)

  async function driftFor(sql: string): Promise<string[]> {
    const dir = migrationsWith(sql)
    dirs.push(dir)
    const database = await createTestDatabase({ migrationsDir: dir, prefix: 'drift' })
    databases.push(database)
    return schemaDrift({ schemaPrismaPath, url: database.url, schema: database.schema })
  }

  afterAll(async () => {
    for (const d of databases) await d.drop()
    for (const d of [...dirs, path.dirname(schemaPrismaPath)]) rmSync(d, { recursive: true, force: true })
  })

  it('when the migrations build exactly what the model describes, then there is no drift', async () => {
    expect(await driftFor(GOOD_SQL)).toEqual([])
  })

  it('when a column is missing, mistyped or has the wrong nullability, then each is named', async () => {
    const sql = GOOD_SQL.replace('"note" TEXT,', '')
      .replace('"size_px" INTEGER NOT NULL', '"size_px" BIGINT NOT NULL')
      .replace('"name" TEXT NOT NULL', '"name" TEXT')
    expect(await driftFor(sql)).toEqual([
      'Widget.name: column is nullable, schema.prisma says required',
      'Widget.note: column "widget"."note" does not exist',
      'Widget.size: column type int8, schema.prisma expects int4',
    ])
  })

  it('when the database has a required column or a table the model lacks, then both are named', async () => {
    const sql =
      GOOD_SQL.replace('"name" TEXT NOT NULL,', '"name" TEXT NOT NULL, "owner" TEXT NOT NULL,') +
      'CREATE TABLE "stray" ("id" INT);'
    expect(await driftFor(sql)).toEqual([
      'table "widget": NOT NULL column "owner" without default is missing from model Widget',
      'table "stray" has no model in schema.prisma',
    ])
  })

  it('when a table is missing, then the model is named', async () => {
    expect(await driftFor('CREATE TABLE "other" ("id" INT);')).toEqual([
      'model Widget: table "widget" does not exist',
      'table "other" has no model in schema.prisma',
    ])
  })
})
