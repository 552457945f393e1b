import { createHash } from 'node:crypto'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import Ajv2020, { type ErrorObject, type ValidateFunction } from 'ajv/dist/2020'
import { ApiError } from '@quartet/core/errors'
import './errors.ts'
import {
  BASE_PATH,
  DOCUMENT_NAMES,
  type DocumentName,
  ITEM_KEY,
  SOURCE_DOCUMENTS,
  type SourceDocumentName,
} from './documents.ts'

/** One thing wrong with a content folder: which document, where inside it (JSON pointer), what. */
export interface ContentProblem {
  document: string
  pointer: string
  message: string
}

/** A document ready to be stored and served: the exact bytes and their digest. */
export interface BuiltDocument {
  name: DocumentName
  body: Buffer
  sha256: string
  bytes: number
  items: number
  schemaVersion: string
}

export interface BuiltRelease {
  version: string
  publishedAt: Date
  documents: BuiltDocument[]
}

export type SourceDocuments = Record<SourceDocumentName, Record<string, unknown>>

/**
 * The content rules: every source document matches its JSON Schema (2020-12), and every
 * cross-reference names an id that exists. The schemas are the app's own (content/schemas), never
 * the ones in the folder being published, so a publish cannot relax them.
 */
export class ContentValidator {
  private readonly validators = new Map<DocumentName, ValidateFunction>()
  readonly schemaVersions = new Map<DocumentName, string>()

  constructor(schemasDir: string) {
    const ajv = new Ajv2020({ allErrors: true, strict: true, allowUnionTypes: true })
    ajv.addKeyword({ keyword: 'x-schema-version', schemaType: 'string' })
    for (const name of DOCUMENT_NAMES) {
      const file = path.join(schemasDir, name.replace(/\.json$/, '.schema.json'))
      const schema = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>
      this.validators.set(name, ajv.compile(schema))
      this.schemaVersions.set(name, String(schema['x-schema-version'] ?? '1.0.0'))
    }
  }

  /** Schema problems of one document (empty when valid). */
  schemaProblems(name: DocumentName, document: unknown): ContentProblem[] {
    const validate = this.validators.get(name)!
    if (validate(document)) return []
    return (validate.errors ?? []).map((e) => ({
      document: name,
      pointer: e.instancePath || '/',
      message: describeAjvError(e),
    }))
  }
}

function describeAjvError(e: ErrorObject): string {
  if (e.keyword === 'additionalProperties')
    return `unknown property ${JSON.stringify((e.params as { additionalProperty: string }).additionalProperty)}`
  if (e.keyword === 'enum')
    return `must be one of ${(e.params as { allowedValues: unknown[] }).allowedValues.map((v) => JSON.stringify(v)).join(', ')}`
  if (e.keyword === 'const')
    return `must be ${JSON.stringify((e.params as { allowedValue: unknown }).allowedValue)}`
  return e.message ?? e.keyword
}

/** Reads the seven source documents of a folder; unreadable or malformed files become problems. */
export function readContentFolder(dir: string): {
  sources: Partial<SourceDocuments>
  problems: ContentProblem[]
} {
  const problems: ContentProblem[] = []
  const sources: Partial<SourceDocuments> = {}
  if (!existsSync(dir)) {
    return { sources, problems: [{ document: dir, pointer: '/', message: 'folder does not exist' }] }
  }
  const present = new Set(readdirSync(dir))
  for (const computed of ['manifest.json', 'catalog.json']) {
    if (present.has(computed))
      problems.push({
        document: computed,
        pointer: '/',
        message: 'is computed at publish and must not be supplied; remove the file',
      })
  }
  for (const name of SOURCE_DOCUMENTS) {
    if (!present.has(name)) {
      problems.push({ document: name, pointer: '/', message: 'file is missing' })
      continue
    }
    try {
      const parsed: unknown = JSON.parse(readFileSync(path.join(dir, name), 'utf8'))
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
        problems.push({ document: name, pointer: '/', message: 'must be a JSON object' })
        continue
      }
      const { $schema: _editorHint, ...document } = parsed as Record<string, unknown>
      sources[name] = document
    } catch (err) {
      problems.push({ document: name, pointer: '/', message: `is not valid JSON: ${(err as Error).message}` })
    }
  }
  return { sources, problems }
}

type Item = { id: string } & Record<string, unknown>
const list = (doc: Record<string, unknown> | undefined, key: string): Item[] =>
  Array.isArray(doc?.[key]) ? (doc[key] as Item[]) : []

/** Cross-references and uniqueness; run only on documents that passed their schema. */
export function referenceProblems(sources: SourceDocuments): ContentProblem[] {
  const problems: ContentProblem[] = []
  const idsOf = (document: SourceDocumentName, key: string): Set<string> => {
    const seen = new Set<string>()
    list(sources[document], key).forEach((item, index) => {
      if (seen.has(item.id))
        problems.push({
          document,
          pointer: `/${key}/${index}/id`,
          message: `duplicate id ${JSON.stringify(item.id)}`,
        })
      seen.add(item.id)
    })
    return seen
  }
  const ids = {
    style: idsOf('styles.json', 'styles'),
    block: idsOf('blocks.json', 'blocks'),
    'quality-gate': idsOf('quality-gates.json', 'gates'),
    term: idsOf('terms.json', 'terms'),
  }
  idsOf('term-mappings.json', 'synonyms')
  idsOf('learning-paths.json', 'paths')
  const missing = (document: SourceDocumentName, pointer: string, kind: keyof typeof ids, id: string) => {
    if (!ids[kind].has(id))
      problems.push({
        document,
        pointer,
        message: `cites ${kind} ${JSON.stringify(id)}, which does not exist`,
      })
  }

  list(sources['blocks.json'], 'blocks').forEach((block, b) =>
    (block.quality_gates as string[]).forEach((gate, g) =>
      missing('blocks.json', `/blocks/${b}/quality_gates/${g}`, 'quality-gate', gate),
    ),
  )
  const mappings = sources['term-mappings.json']
  list(mappings, 'synonyms').forEach((synonym, s) =>
    missing('term-mappings.json', `/synonyms/${s}/preferred`, 'term', synonym.preferred as string),
  )
  ;(Array.isArray(mappings?.links) ? (mappings.links as Array<Record<string, unknown>>) : []).forEach(
    (link, l) => {
      missing('term-mappings.json', `/links/${l}/term`, 'term', link.term as string)
      ;(link.blocks as string[]).forEach((id, i) =>
        missing('term-mappings.json', `/links/${l}/blocks/${i}`, 'block', id),
      )
      ;(link.styles as string[]).forEach((id, i) =>
        missing('term-mappings.json', `/links/${l}/styles/${i}`, 'style', id),
      )
    },
  )
  list(sources['learning-paths.json'], 'paths').forEach((learningPath, p) => {
    const steps = learningPath.steps as Array<{
      order: number
      cites: Array<{ kind: keyof typeof ids; id: string }>
    }>
    steps.forEach((step, s) => {
      if (step.order !== s + 1)
        problems.push({
          document: 'learning-paths.json',
          pointer: `/paths/${p}/steps/${s}/order`,
          message: `must be ${s + 1}: steps are numbered 1, 2, 3… in array order`,
        })
      step.cites.forEach((cite, c) =>
        missing('learning-paths.json', `/paths/${p}/steps/${s}/cites/${c}/id`, cite.kind, cite.id),
      )
    })
  })
  const entryPoints = (sources['skill-manifest.json']?.entry_points ?? []) as Array<{
    document: string
    url: string
  }>
  const listed = new Set<string>()
  entryPoints.forEach((entry, e) => {
    if (listed.has(entry.document))
      problems.push({
        document: 'skill-manifest.json',
        pointer: `/entry_points/${e}/document`,
        message: `lists ${entry.document} twice`,
      })
    listed.add(entry.document)
    if (entry.url !== `${BASE_PATH}/${entry.document}`)
      problems.push({
        document: 'skill-manifest.json',
        pointer: `/entry_points/${e}/url`,
        message: `must be ${BASE_PATH}/${entry.document}`,
      })
  })
  return problems
}

/** Schema and reference problems of a whole folder's sources; empty means publishable. */
export function validateSources(
  validator: ContentValidator,
  read: { sources: Partial<SourceDocuments>; problems: ContentProblem[] },
): ContentProblem[] {
  const problems = [...read.problems]
  for (const name of SOURCE_DOCUMENTS) {
    const document = read.sources[name]
    if (document !== undefined) problems.push(...validator.schemaProblems(name, document))
  }
  // References are only meaningful between documents that are all present and well-formed.
  if (problems.length === 0) problems.push(...referenceProblems(read.sources as SourceDocuments))
  return problems
}

export function contentInvalid(problems: ContentProblem[]): ApiError {
  const shown = problems.slice(0, 20).map((p) => `${p.document} ${p.pointer}: ${p.message}`)
  const more = problems.length > shown.length ? `; … and ${problems.length - shown.length} more` : ''
  return new ApiError(
    'content_invalid',
    `content is invalid (${problems.length} problem${problems.length === 1 ? '' : 's'}): ${shown.join('; ')}${more}`,
    { problems },
  )
}

const sha256 = (body: Buffer) => createHash('sha256').update(body).digest('hex')

function catalogOf(sources: SourceDocuments): Array<Record<string, unknown>> {
  const items: Array<Record<string, unknown>> = []
  const add = (id: string, kind: string, title: string, document: DocumentName, tags: unknown[]) =>
    items.push({ id, kind, title, document, tags: [...new Set(tags.map(String))] })
  for (const s of list(sources['styles.json'], 'styles'))
    add(s.id, 'style', s.name as string, 'styles.json', s.keywords as string[])
  for (const b of list(sources['blocks.json'], 'blocks'))
    add(b.id, 'block', b.name as string, 'blocks.json', [b.kind, ...(b.variants as Item[]).map((v) => v.id)])
  for (const g of list(sources['quality-gates.json'], 'gates'))
    add(g.id, 'quality-gate', g.title as string, 'quality-gates.json', [g.category, g.level])
  for (const t of list(sources['terms.json'], 'terms'))
    add(t.id, 'term', `${t.en as string} / ${t.zh as string}`, 'terms.json', [t.category, t.pos])
  const terms = new Map(list(sources['terms.json'], 'terms').map((t) => [t.id, t]))
  for (const s of list(sources['term-mappings.json'], 'synonyms')) {
    const preferred = terms.get(s.preferred as string)
    add(
      s.id,
      'synonym',
      `Preferred: ${preferred?.en as string} / ${preferred?.zh as string}`,
      'term-mappings.json',
      ['synonym', ...(s.variants as Array<{ text: string }>).map((v) => v.text)],
    )
  }
  for (const p of list(sources['learning-paths.json'], 'paths'))
    add(p.id, 'learning-path', p.title as string, 'learning-paths.json', [
      'learning-path',
      ...new Set(
        (p.steps as Array<{ cites: Array<{ kind: string }> }>).flatMap((s) => s.cites.map((c) => c.kind)),
      ),
    ])
  return items
}

function itemCount(name: DocumentName, document: Record<string, unknown>): number {
  const key = ITEM_KEY[name]
  return key && Array.isArray(document[key]) ? (document[key] as unknown[]).length : 0
}

/**
 * Turns validated sources into the nine served documents: the skill manifest gets the release
 * version, the catalog indexes every item, and the manifest (last) records each document's path,
 * item count, sha256, bytes and schema version. Bytes are compact JSON, UTF-8.
 */
export function buildRelease(
  validator: ContentValidator,
  sources: SourceDocuments,
  version: string,
  publishedAt: Date,
): BuiltRelease {
  const documents: Record<string, Record<string, unknown>> = {
    ...sources,
    'skill-manifest.json': { ...sources['skill-manifest.json'], version },
    'catalog.json': {
      schema_version: validator.schemaVersions.get('catalog.json'),
      release: version,
      items: catalogOf(sources),
    },
  }
  const built: BuiltDocument[] = []
  const encode = (name: DocumentName, document: Record<string, unknown>): BuiltDocument => {
    const problems = validator.schemaProblems(name, document)
    if (problems.length) throw contentInvalid(problems)
    const body = Buffer.from(JSON.stringify(document), 'utf8')
    return {
      name,
      body,
      sha256: sha256(body),
      bytes: body.length,
      items: itemCount(name, document),
      schemaVersion: validator.schemaVersions.get(name)!,
    }
  }
  for (const name of DOCUMENT_NAMES) if (name !== 'manifest.json') built.push(encode(name, documents[name]!))
  const manifest = {
    schema_version: validator.schemaVersions.get('manifest.json'),
    service: 'design-archive',
    version,
    published_at: publishedAt.toISOString(),
    base_path: BASE_PATH,
    documents: built.map((d) => ({
      name: d.name,
      path: `${BASE_PATH}/${d.name}`,
      items: d.items,
      sha256: d.sha256,
      bytes: d.bytes,
      schema_version: d.schemaVersion,
    })),
  }
  return { version, publishedAt, documents: [encode('manifest.json', manifest), ...built] }
}
