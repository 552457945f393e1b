import type { Logger } from '@quartet/core/log'
import {
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLError,
  type GraphQLSchema,
  Kind,
  locatedError,
  type OperationDefinitionNode,
  type SelectionNode,
} from 'graphql'
import type * as GraphQLJit from 'graphql-jit'
import type { CompiledQuery } from 'graphql-jit'

/**
 * Query operations the fast path has seen before, compiled by graphql-jit (as Mercurius does for
 * repeated queries): the executor graphql-js builds per field (an info object, argument
 * coercion, promise checks, the completion of each value) cost more than the reads themselves
 * for a page of 50 subdomains. graphql-jit is loaded with the first query (not at start), and a
 * query is compiled on its second use; until then, and if it cannot be loaded or compiled,
 * graphql-js runs it. Mutations stay on graphql-js, whose serial execution they rely on.
 */
export function compiledQueryCache(schema: GraphQLSchema, logger: Logger) {
  let jit: typeof GraphQLJit | undefined
  let loading: Promise<void> | undefined
  const byDocument = new WeakMap<DocumentNode, Map<string, CompiledQuery | 'seen' | 'unsupported'>>()
  return {
    get(document: DocumentNode, operationName: string | null | undefined): CompiledQuery | null {
      let forDocument = byDocument.get(document)
      if (!forDocument) byDocument.set(document, (forDocument = new Map()))
      const key = operationName ?? ''
      const known = forDocument.get(key)
      if (known === undefined) {
        forDocument.set(key, 'seen')
        loading ??= import('graphql-jit').then(
          (module) => {
            jit = module
          },
          (err: unknown) =>
            logger.warn({ err }, 'graphql-jit could not be loaded; queries run on graphql-js'),
        )
        return null
      }
      if (known !== 'seen') return known === 'unsupported' ? null : known
      if (!jit) return null
      let usable: CompiledQuery | 'unsupported' = 'unsupported'
      try {
        const compiled = jit.compileQuery(schema, document, operationName ?? undefined)
        if (jit.isCompiledQuery(compiled)) usable = compiled
      } catch (err) {
        logger.warn({ err }, 'graphql-jit could not compile a query; it runs on graphql-js')
      }
      forDocument.set(key, usable)
      return usable === 'unsupported' ? null : usable
    },
  }
}

/**
 * A compiled query's error as graphql-js reports it: graphql-js wraps what a resolver threw with
 * locatedError at the field nodes of its path (graphql-jit leaves a thrown GraphQLError without
 * locations). The nodes are those under the path's response keys, through fragments.
 */
export function locatedAsGraphQLJs(
  error: GraphQLError,
  document: DocumentNode,
  operation: OperationDefinitionNode,
): GraphQLError {
  const fragments = new Map<string, FragmentDefinitionNode>()
  for (const d of document.definitions)
    if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d)
  const fieldsWithKey = (selections: readonly SelectionNode[], key: string, seen: Set<string>): FieldNode[] =>
    selections.flatMap((selection) => {
      if (selection.kind === Kind.FIELD)
        return (selection.alias ?? selection.name).value === key ? [selection] : []
      if (selection.kind === Kind.INLINE_FRAGMENT)
        return fieldsWithKey(selection.selectionSet.selections, key, seen)
      const fragment = fragments.get(selection.name.value)
      if (!fragment || seen.has(fragment.name.value)) return []
      return fieldsWithKey(fragment.selectionSet.selections, key, new Set([...seen, fragment.name.value]))
    })
  const path = error.path ?? []
  let nodes: FieldNode[] = []
  let selections: Array<readonly SelectionNode[]> = [operation.selectionSet.selections]
  for (const key of path) {
    if (typeof key === 'number') continue
    nodes = selections.flatMap((list) => fieldsWithKey(list, key, new Set()))
    selections = nodes.flatMap((node) => (node.selectionSet ? [node.selectionSet.selections] : []))
  }
  return locatedError(error.originalError ?? error, nodes, path)
}
