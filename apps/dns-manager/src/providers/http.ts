import { ProviderError } from '../domain/provider.ts'

/** fetch with a timeout; network failures and timeouts become ProviderError. */
export async function upstreamFetch(
  url: string,
  init: RequestInit & { timeoutMs: number },
): Promise<{ status: number; body: unknown }> {
  const { timeoutMs, ...rest } = init
  let res: Response
  try {
    res = await fetch(url, { ...rest, signal: AbortSignal.timeout(timeoutMs) })
  } catch (err) {
    throw new ProviderError(`upstream unreachable: ${(err as Error).message}`)
  }
  const text = await res.text()
  let body: unknown = text
  try {
    body = text ? JSON.parse(text) : null
  } catch {
    // keep the text
  }
  return { status: res.status, body }
}
