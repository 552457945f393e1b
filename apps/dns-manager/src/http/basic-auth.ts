/**
 * `Authorization: Basic base64(KEY:SECRET)`, the form ACME clients (lego's httpreq) and dyndns2
 * clients (ddclient, inadyn, routers) send, split at the first `:`. Null when absent or incomplete.
 */
export function basicCredentials(
  header: string | string[] | undefined,
): { key: string; secret: string } | null {
  const value = Array.isArray(header) ? header[0] : header
  const m = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(value ?? '')
  if (!m) return null
  const decoded = Buffer.from(m[1]!, 'base64').toString('utf8')
  const colon = decoded.indexOf(':')
  if (colon <= 0 || colon === decoded.length - 1) return null
  return { key: decoded.slice(0, colon), secret: decoded.slice(colon + 1) }
}
