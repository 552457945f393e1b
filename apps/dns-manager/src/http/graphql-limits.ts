import { ApiError } from '@quartet/core/errors'
import {
  type ArgumentNode,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  Kind,
  type SelectionSetNode,
} from 'graphql'

/**
 * What one GraphQL document may ask for, checked before anything runs (README "GraphQL limits").
 * Two steps, so that nothing costly happens before a document is known to be small:
 *
 * 1. `checkNesting`, on the raw text before the parser sees it: brackets (`{` and `[`) nested
 *    deeper than twice the depth limit are refused. The parser recurses once per level, so a
 *    document thousands of levels deep would exhaust the stack (it was a 500).
 * 2. `measureDocument`, on the parsed document before validation: depth, fields (every alias
 *    counts) and cost, following fragments (each measured once, cycles cut), per operation.
 *    Introspection root fields (`__schema`, `__type`) are measured apart, against their own
 *    allowance: the standard introspection query is 15 levels deep and selects 220 fields, which
 *    no data query needs. Its answer is bounded by the schema, not by data; what could still
 *    grow it, types nested in types through `fields`/`interfaces`/`possibleTypes`/`inputFields`,
 *    is refused by graphql-js's MaxIntrospectionDepthRule (in its specified rules) at validation.
 */
export interface DocumentLimits {
  maxDepth: number
  maxFields: number
  maxCost: number
  /** Root fields that return a page of rows, with the page size their `per_page` chooses. */
  pages: { fields: ReadonlySet<string>; defaultSize: number; maxSize: number }
  /** The allowance of introspection root fields; null: introspection is off. */
  introspection: IntrospectionAllowance | null
}

/** What the introspection root fields of one operation may select together. */
export interface IntrospectionAllowance {
  maxDepth: number
  maxFields: number
  /** `__schema` and `__type` root fields (aliases count) in one operation. */
  maxRootFields: number
}

/**
 * Room for the introspection queries tools send: graphql-js's `getIntrospectionQuery()` (depth 15,
 * up to 230 fields with every option), GraphiQL's, Apollo's and graphql-codegen's (the same
 * function, some with a deeper `typeDepth`), one `__schema` each.
 */
export const INTROSPECTION_ALLOWANCE: IntrospectionAllowance = {
  maxDepth: 20,
  maxFields: 500,
  maxRootFields: 2,
}

const INTROSPECTION_ROOT_FIELDS = new Set(['__schema', '__type'])

export interface DocumentMeasure {
  depth: number
  fields: number
  cost: number
}

/** The introspection root fields of the worst operation, measured apart. */
export interface IntrospectionMeasure {
  depth: number
  fields: number
  rootFields: number
}

/** Refuses text whose `{`/`[` nesting passes `max`; strings and comments are skipped. */
export function checkNesting(source: string, max: number): void {
  let depth = 0
  for (let i = 0; i < source.length; i++) {
    const c = source.charCodeAt(i)
    if (c === 0x23 /* # */) {
      while (i < source.length && source.charCodeAt(i) !== 0x0a && source.charCodeAt(i) !== 0x0d) i++
    } else if (c === 0x22 /* " */) {
      if (source.startsWith('"""', i)) {
        i += 3
        while (i < source.length && !source.startsWith('"""', i)) i += source.startsWith('\\"""', i) ? 4 : 1
        i += 2
      } else {
        i++
        while (i < source.length && source.charCodeAt(i) !== 0x22 && source.charCodeAt(i) !== 0x0a) {
          if (source.charCodeAt(i) === 0x5c /* \ */) i++
          i++
        }
      }
    } else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      if (++depth > max)
        throw new ApiError('bad_request', `the document nests brackets deeper than ${max} levels`, {
          field: 'query',
          max_nesting: max,
        })
    } else if ((c === 0x7d /* } */ || c === 0x5d) /* ] */ && depth > 0) depth--
  }
}

/**
 * The largest depth, field count and cost over the document's operations; `introspection`, the
 * same of their introspection root fields (which the others leave out).
 */
export function measureDocument(
  document: DocumentNode,
  limits: DocumentLimits,
): DocumentMeasure & { introspection: IntrospectionMeasure } {
  const fragments = new Map<string, FragmentDefinitionNode>()
  for (const def of document.definitions)
    if (def.kind === Kind.FRAGMENT_DEFINITION) fragments.set(def.name.value, def)
  // A fragment's measure does not depend on where it is spread (beyond root or not), so each is
  // measured once: fragments spreading fragments twice over cannot make this exponential.
  const measured = new Map<string, DocumentMeasure>()
  const inProgress = new Set<string>()
  const none: DocumentMeasure = { depth: 0, fields: 0, cost: 0 }
  // The operation being measured's introspection root fields (fragments at the root included:
  // a root fragment is measured once, and its introspection fields counted once).
  let intro: IntrospectionMeasure = { depth: 0, fields: 0, rootFields: 0 }

  const pageSize = (field: FieldNode): number => {
    const arg = field.arguments?.find((a: ArgumentNode) => a.name.value === 'per_page')
    if (!arg) return limits.pages.defaultSize
    // Given as a variable (or anything but an integer): counted as the largest page.
    if (arg.value.kind !== Kind.INT) return limits.pages.maxSize
    return Math.min(Math.max(1, Number(arg.value.value)), limits.pages.maxSize)
  }

  const fragment = (name: string, atRoot: boolean): DocumentMeasure => {
    const key = `${atRoot ? 'root' : 'inner'}:${name}`
    const known = measured.get(key)
    if (known) return known
    const def = fragments.get(name)
    // Unknown fragments and cycles are validation errors; they add nothing here.
    if (!def || inProgress.has(key)) return none
    inProgress.add(key)
    const m = selections(def.selectionSet, atRoot)
    inProgress.delete(key)
    measured.set(key, m)
    return m
  }

  /** Depth counts field levels below this set; cost is per row of the page holding the set. */
  function selections(set: SelectionSetNode, atRoot: boolean): DocumentMeasure {
    let depth = 0
    let fields = 0
    let cost = 0
    for (const sel of set.selections) {
      let inner: DocumentMeasure
      if (sel.kind === Kind.FIELD && atRoot && INTROSPECTION_ROOT_FIELDS.has(sel.name.value)) {
        const below = sel.selectionSet ? selections(sel.selectionSet, false) : none
        intro = {
          depth: Math.max(intro.depth, 1 + below.depth),
          fields: intro.fields + 1 + below.fields,
          rootFields: intro.rootFields + 1,
        }
        continue
      }
      if (sel.kind === Kind.FIELD) {
        const below = sel.selectionSet ? selections(sel.selectionSet, false) : none
        const rows = atRoot && limits.pages.fields.has(sel.name.value) ? pageSize(sel) : 1
        inner = { depth: 1 + below.depth, fields: 1 + below.fields, cost: 1 + rows * below.cost }
      } else if (sel.kind === Kind.INLINE_FRAGMENT) inner = selections(sel.selectionSet, atRoot)
      else inner = fragment(sel.name.value, atRoot)
      depth = Math.max(depth, inner.depth)
      fields += inner.fields
      cost += inner.cost
    }
    return { depth, fields, cost }
  }

  let worst = none
  let worstIntro: IntrospectionMeasure = intro
  for (const def of document.definitions) {
    if (def.kind !== Kind.OPERATION_DEFINITION) continue
    intro = { depth: 0, fields: 0, rootFields: 0 }
    // Root fragments are measured per operation here: what they hold at the root counts for each.
    for (const key of [...measured.keys()]) if (key.startsWith('root:')) measured.delete(key)
    const m = selections(def.selectionSet, def.operation !== 'subscription')
    worst = {
      depth: Math.max(worst.depth, m.depth),
      fields: Math.max(worst.fields, m.fields),
      cost: Math.max(worst.cost, m.cost),
    }
    worstIntro = {
      depth: Math.max(worstIntro.depth, intro.depth),
      fields: Math.max(worstIntro.fields, intro.fields),
      rootFields: Math.max(worstIntro.rootFields, intro.rootFields),
    }
  }
  return { ...worst, introspection: worstIntro }
}

/** The message of an introspection query refused because introspection is off. */
export const INTROSPECTION_OFF_MESSAGE =
  'introspection is turned off on this server (GRAPHQL_INTROSPECTION=off); the schema is published at GET /graphql/schema.graphql'

/** `measureDocument`, refused with 400 bad_request (details name the limits) past any limit. */
export function checkDocument(document: DocumentNode, limits: DocumentLimits): void {
  const m = measureDocument(document, limits)
  const intro = m.introspection
  if (intro.rootFields > 0) {
    const allowance = limits.introspection
    if (!allowance)
      throw new ApiError('bad_request', INTROSPECTION_OFF_MESSAGE, { field: 'query', introspection: 'off' })
    const tooMuch =
      intro.rootFields > allowance.maxRootFields
        ? `an operation may hold at most ${allowance.maxRootFields} introspection root fields (__schema, __type), this one holds ${intro.rootFields}`
        : intro.depth > allowance.maxDepth
          ? `introspection depth ${intro.depth} exceeds its limit of ${allowance.maxDepth}`
          : intro.fields > allowance.maxFields
            ? `introspection selects ${intro.fields} fields, more than its limit of ${allowance.maxFields}`
            : null
    if (tooMuch)
      throw new ApiError('bad_request', tooMuch, {
        field: 'query',
        introspection_depth: intro.depth,
        introspection_fields: intro.fields,
        introspection_root_fields: intro.rootFields,
        max_introspection_depth: allowance.maxDepth,
        max_introspection_fields: allowance.maxFields,
        max_introspection_root_fields: allowance.maxRootFields,
      })
  }
  const problem =
    m.depth > limits.maxDepth
      ? `query depth ${m.depth} exceeds the limit of ${limits.maxDepth}`
      : m.fields > limits.maxFields
        ? `query selects ${m.fields} fields, more than the limit of ${limits.maxFields}`
        : m.cost > limits.maxCost
          ? `query cost ${m.cost} exceeds the limit of ${limits.maxCost} (a field inside a page counts once per row)`
          : null
  if (problem)
    throw new ApiError('bad_request', problem, {
      field: 'query',
      depth: m.depth,
      fields: m.fields,
      cost: m.cost,
      max_depth: limits.maxDepth,
      max_fields: limits.maxFields,
      max_cost: limits.maxCost,
    })
}
