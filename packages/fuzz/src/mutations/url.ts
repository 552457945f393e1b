import fc from 'fast-check'
import { type Draft, type Mutation, mutation } from '../draft.ts'
import type { JsonSchema } from '../schema.ts'
import { nastyUrlPiece } from '../strings.ts'
import { short } from './short.ts'

/** Query mutations: wrong values for known parameters, unknown ones, repeats, brackets, bad encodings. */
export function queryMutations(
  params: ReadonlyArray<{ name: string; schema: JsonSchema }>,
): fc.Arbitrary<Mutation> {
  const names = params.length ? fc.constantFrom(...params.map((p) => p.name)) : fc.constant('q')
  return fc.oneof(
    fc.tuple(names, nastyUrlPiece).map(([n, v]) => mutation(`?${n}=${short(v)}`, (d) => setQuery(d, n, v))),
    fc
      .tuple(names, fc.constantFrom(...numericEdges))
      .map(([n, v]) => mutation(`?${n}=${v}`, (d) => setQuery(d, n, v))),
    fc
      .tuple(names, fc.oneof(nastyUrlPiece, fc.constant('1')))
      .map(([n, v]) => mutation(`?${n} twice`, (d) => ({ ...d, query: [...d.query, [n, v], [n, v]] }))),
    fc
      .tuple(names, fc.constantFrom('[a]', '[]', '[0]', '[__proto__]', '[constructor][prototype]', '.x'))
      .map(([n, suffix]) =>
        mutation(`?${n}${suffix}=1`, (d) => ({ ...d, query: [...d.query, [`${n}${suffix}`, '1']] })),
      ),
    names.map((n) =>
      mutation(`?${n} without =`, (d) => ({ ...d, query: [...d.query.filter(([k]) => k !== n), [n, null]] })),
    ),
    names.map((n) => mutation(`no ?${n}`, (d) => ({ ...d, query: d.query.filter(([k]) => k !== n) }))),
    fc
      .tuple(nastyUrlPiece, nastyUrlPiece)
      .map(([k, v]) =>
        mutation(`?${short(k)}=${short(v)} (unknown)`, (d) => ({ ...d, query: [...d.query, [k, v]] })),
      ),
    fc.integer({ min: 200, max: 2000 }).map((n) =>
      mutation(`${n} query parameters`, (d) => ({
        ...d,
        query: [...d.query, ...Array.from({ length: n }, (_, i): [string, string] => [`p${i}`, String(i)])],
      })),
    ),
  )
}

function setQuery(d: Draft, name: string, value: string): Draft {
  return { ...d, query: [...d.query.filter(([k]) => k !== name), [name, value]] }
}

/** Numbers an id, a cursor or a count must refuse or bound: past int4 and int8, fractions, signs, other scripts. */
const numericEdges = [
  '0',
  '-1',
  '1.5',
  '1e3',
  '2147483647',
  '2147483648',
  '9999999999',
  '9223372036854775808',
  '99999999999999999999999',
  ' 1',
  '0x1',
  '१२',
] as const

/** Path parameter mutations: the value of one parameter replaced by something it must refuse. */
export function pathMutations(
  template: string,
  params: ReadonlyArray<{ name: string }>,
): fc.Arbitrary<Mutation> | undefined {
  if (!params.length) return undefined
  return fc
    .tuple(
      fc.constantFrom(...params.map((p) => p.name)),
      fc.oneof(nastyUrlPiece, fc.constantFrom(...numericEdges)),
    )
    .map(([name, value]) =>
      mutation(`{${name}} = ${short(value)}`, (d) => ({
        ...d,
        path: replaceParam(template, d.path, name, value),
      })),
    )
}

/** The concrete path with the segment that `{name}` filled replaced. */
function replaceParam(template: string, path: string, name: string, value: string): string {
  const t = template.split('/')
  const p = path.split('/')
  const at = t.indexOf(`{${name}}`)
  if (at < 0 || p.length !== t.length) return path
  p[at] = value
  return p.join('/')
}
