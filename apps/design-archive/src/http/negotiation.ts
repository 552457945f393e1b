/** HTTP content negotiation and conditional-request rules (RFC 9110 §12.5.3, §13.1). */

export type Coding = 'br' | 'gzip' | 'identity'

/**
 * Picks the response coding from Accept-Encoding: the highest q-value among br, gzip and
 * identity, with br preferred over gzip and both over identity when q-values tie. `*` covers
 * codings not named. An unnamed identity ranks below any accepted compression; when everything
 * is refused we still send identity, as nginx does, rather than answer 406.
 */
export function negotiateEncoding(header: string | undefined): Coding {
  if (!header) return 'identity'
  const q = new Map<string, number>()
  for (const part of header.split(',')) {
    const [rawName, ...params] = part.trim().split(';')
    const name = rawName?.trim().toLowerCase()
    if (!name) continue
    let quality = 1
    for (const param of params) {
      const [k, v] = param.trim().split('=')
      if (k?.trim().toLowerCase() === 'q') {
        const parsed = Number(v)
        quality = Number.isFinite(parsed) ? Math.min(Math.max(parsed, 0), 1) : 0
      }
    }
    q.set(name === 'x-gzip' ? 'gzip' : name, Math.max(quality, q.get(name) ?? 0))
  }
  const star = q.get('*')
  const qualityOf = (coding: Coding): number => {
    const named = q.get(coding)
    if (named !== undefined) return named
    // `*` covers identity too when it is not named; otherwise identity is acceptable but is
    // the last resort, below any compression the client accepted with q > 0.
    if (coding === 'identity') return star ?? 0.001
    return star ?? 0
  }
  let best: Coding = 'identity'
  let bestQ = 0
  for (const coding of ['br', 'gzip', 'identity'] as const) {
    const quality = qualityOf(coding)
    if (quality > bestQ) {
      best = coding
      bestQ = quality
    }
  }
  // identity wins ties only when nothing compressed is acceptable (loop order prefers br, gzip).
  return bestQ === 0 ? 'identity' : best
}

/** If-None-Match uses the weak comparison: W/"x" matches "x"; `*` matches any current entity. */
export function ifNoneMatchMatches(header: string, etag: string): boolean {
  if (header === etag) return true // what a cache sends back: the tag as given
  const trimmed = header.trim()
  if (trimmed === '*') return true
  const opaque = etag.replace(/^W\//, '')
  for (const candidate of trimmed.split(',')) {
    if (candidate.trim().replace(/^W\//, '') === opaque) return true
  }
  return false
}

/** True when the entity has not changed since the If-Modified-Since date (whole seconds). */
export function notModifiedSince(header: string, lastModifiedSeconds: number): boolean {
  const since = Date.parse(header)
  if (Number.isNaN(since)) return false
  return lastModifiedSeconds <= Math.floor(since / 1000)
}

/**
 * If-Match uses the strong comparison (RFC 9110 §13.1.1): `*` matches any current
 * representation, a listed tag matches only when neither it nor ours is weak and they are equal.
 */
export function ifMatchMatches(header: string, etag: string): boolean {
  const trimmed = header.trim()
  if (trimmed === '*') return true
  if (etag.startsWith('W/')) return false
  for (const candidate of trimmed.split(',')) if (candidate.trim() === etag) return true
  return false
}

/**
 * True when the entity changed after the If-Unmodified-Since date (whole seconds): the
 * precondition fails. A date that does not parse is ignored (RFC 9110 §13.1.4), so it holds.
 */
export function modifiedSince(header: string, lastModifiedSeconds: number): boolean {
  const since = Date.parse(header)
  if (Number.isNaN(since)) return false
  return lastModifiedSeconds > Math.floor(since / 1000)
}
