/** The public path prefix of every document (the seed's {base_url}). */
export const BASE_PATH = '/design-api/v1'

/** The nine documents, in manifest order. */
export const DOCUMENT_NAMES = [
  'manifest.json',
  'catalog.json',
  'styles.json',
  'blocks.json',
  'quality-gates.json',
  'terms.json',
  'term-mappings.json',
  'learning-paths.json',
  'skill-manifest.json',
] as const
export type DocumentName = (typeof DOCUMENT_NAMES)[number]

/** The documents an author writes; catalog.json and manifest.json are computed at publish. */
export const SOURCE_DOCUMENTS = [
  'styles.json',
  'blocks.json',
  'quality-gates.json',
  'terms.json',
  'term-mappings.json',
  'learning-paths.json',
  'skill-manifest.json',
] as const satisfies readonly DocumentName[]
export type SourceDocumentName = (typeof SOURCE_DOCUMENTS)[number]

/** Where each document keeps its items (for item counts); null for documents without a list. */
export const ITEM_KEY: Record<DocumentName, string | null> = {
  'manifest.json': 'documents',
  'catalog.json': 'items',
  'styles.json': 'styles',
  'blocks.json': 'blocks',
  'quality-gates.json': 'gates',
  'terms.json': 'terms',
  'term-mappings.json': 'synonyms',
  'learning-paths.json': 'paths',
  'skill-manifest.json': 'entry_points',
}

const NAMES = new Set<string>(DOCUMENT_NAMES)
export function isDocumentName(name: string): name is DocumentName {
  return NAMES.has(name)
}

/** Release versions: short, URL-safe, no dots-only tricks. */
export const RELEASE_VERSION_PATTERN = /^[0-9A-Za-z][0-9A-Za-z._+-]{0,63}$/
