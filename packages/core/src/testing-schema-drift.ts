import { readFileSync } from 'node:fs'
import { get_dmmf } from '@prisma/prisma-schema-wasm'
import pg from 'pg'

/**
 * Compares an app's schema.prisma with the tables its SQL migrations built, so the two cannot
 * drift apart unnoticed (Prisma's own `migrate diff` needs a schema engine we cannot download).
 * Returns the differences as sentences; an empty list means they agree.
 *
 * Checked: every model has its table; every scalar field has its column, with a compatible type
 * and the same nullability; every NOT NULL column without a default is known to the model (else
 * the generated client could not insert a row); no table exists that no model describes.
 */
export async function schemaDrift(options: {
  schemaPrismaPath: string
  url: string
  schema: string
}): Promise<string[]> {
  const dmmf = JSON.parse(
    get_dmmf(JSON.stringify({ prismaSchema: readFileSync(options.schemaPrismaPath, 'utf8') })),
  ) as { datamodel: { models: DmmfModel[]; enums: Array<{ name: string; dbName?: string | null }> } }
  const client = new pg.Client({ connectionString: options.url })
  await client.connect()
  let columns: ColumnRow[]
  try {
    columns = (
      await client.query<ColumnRow>(
        `SELECT table_name, column_name, is_nullable, udt_name, column_default
         FROM information_schema.columns WHERE table_schema = $1`,
        [options.schema],
      )
    ).rows
  } finally {
    await client.end()
  }

  const enums = new Map(dmmf.datamodel.enums.map((e) => [e.name, e.dbName ?? e.name]))
  const problems: string[] = []
  const tables = new Map<string, ColumnRow[]>()
  for (const c of columns) tables.set(c.table_name, [...(tables.get(c.table_name) ?? []), c])

  const modelTables = new Set<string>()
  for (const model of dmmf.datamodel.models) {
    const table = model.dbName ?? model.name
    modelTables.add(table)
    const cols = tables.get(table)
    if (!cols) {
      problems.push(`model ${model.name}: table "${table}" does not exist`)
      continue
    }
    const byName = new Map(cols.map((c) => [c.column_name, c]))
    const known = new Set<string>()
    for (const field of model.fields) {
      if (field.kind !== 'scalar' && field.kind !== 'enum') continue
      const column = field.dbName ?? field.name
      known.add(column)
      const col = byName.get(column)
      if (!col) {
        problems.push(`${model.name}.${field.name}: column "${table}"."${column}" does not exist`)
        continue
      }
      const expected = expectedUdt(field, enums)
      if (expected && !expected.includes(col.udt_name)) {
        problems.push(
          `${model.name}.${field.name}: column type ${col.udt_name}, schema.prisma expects ${expected.join(' or ')}`,
        )
      }
      // Prisma creates scalar lists nullable whatever the model says; only check plain fields.
      if (!field.isList && field.isRequired !== (col.is_nullable === 'NO')) {
        problems.push(
          `${model.name}.${field.name}: column is ${col.is_nullable === 'NO' ? 'NOT NULL' : 'nullable'}, schema.prisma says ${field.isRequired ? 'required' : 'optional'}`,
        )
      }
    }
    for (const col of cols) {
      if (!known.has(col.column_name) && col.is_nullable === 'NO' && col.column_default === null) {
        problems.push(
          `table "${table}": NOT NULL column "${col.column_name}" without default is missing from model ${model.name}`,
        )
      }
    }
  }
  for (const table of tables.keys()) {
    if (table !== '_prisma_migrations' && !modelTables.has(table))
      problems.push(`table "${table}" has no model in schema.prisma`)
  }
  return problems
}

interface DmmfModel {
  name: string
  dbName: string | null
  fields: Array<{
    name: string
    dbName?: string | null
    kind: 'scalar' | 'object' | 'enum' | 'unsupported'
    type: string
    isRequired: boolean
    isList: boolean
    nativeType?: [string, string[]] | null
  }>
}

interface ColumnRow {
  table_name: string
  column_name: string
  is_nullable: 'YES' | 'NO'
  udt_name: string
  column_default: string | null
}

const SCALAR_UDT: Record<string, string[]> = {
  String: ['text'],
  Int: ['int4'],
  BigInt: ['int8'],
  Float: ['float8'],
  Decimal: ['numeric'],
  Boolean: ['bool'],
  DateTime: ['timestamp'],
  Json: ['jsonb'],
  Bytes: ['bytea'],
}

const NATIVE_UDT: Record<string, string[]> = {
  Uuid: ['uuid'],
  Char: ['bpchar'],
  VarChar: ['varchar'],
  Text: ['text'],
  Timestamptz: ['timestamptz'],
  Timestamp: ['timestamp'],
  Date: ['date'],
  SmallInt: ['int2'],
  Integer: ['int4'],
  BigInt: ['int8'],
  Json: ['json'],
  JsonB: ['jsonb'],
  Inet: ['inet'],
  Citext: ['citext'],
  DoublePrecision: ['float8'],
  Real: ['float4'],
}

function expectedUdt(field: DmmfModel['fields'][number], enums: Map<string, string>): string[] | undefined {
  const base =
    field.kind === 'enum'
      ? [enums.get(field.type) ?? field.type]
      : field.nativeType
        ? NATIVE_UDT[field.nativeType[0]]
        : SCALAR_UDT[field.type]
  if (!base) return undefined
  return field.isList ? base.map((u) => `_${u}`) : base
}
