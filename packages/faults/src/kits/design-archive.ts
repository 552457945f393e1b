import type { FaultStack } from '../stack.ts'
import { call, type Kit, readinessProbe } from './common.ts'

/**
 * design-archive serves its active release from memory: documents need neither Postgres nor
 * Redis once loaded. Only a request for another release (`?version=`) reads the database.
 */
export async function designArchiveKit(stack: FaultStack): Promise<Kit> {
  const service = stack.services['design-archive']
  const manifest = await call<{ version?: string }>(`${service.url}/design-api/v1/manifest.json`)
  if (manifest.status !== 200 || !manifest.body.version)
    throw new Error(`design-archive: no manifest: ${manifest.status}`)
  const version = manifest.body.version
  return {
    name: 'design-archive',
    service,
    probes: [
      {
        name: 'GET /design-api/v1/manifest.json',
        everyMs: 200,
        next: () => ({ method: 'GET', path: '/design-api/v1/manifest.json' }),
        ok: (s) => s.status === 200 && (s.body as { version?: string })?.version === version,
        needs: { postgres: 'none', redis: 'none' },
        envelope: 'plain',
      },
      {
        name: 'GET /design-api/v1/terms.json',
        everyMs: 500,
        next: () => ({ method: 'GET', path: '/design-api/v1/terms.json', countBody: true }),
        ok: (s) => s.status === 200 && s.bytes > 1000,
        needs: { postgres: 'none', redis: 'none' },
        envelope: 'plain',
      },
      {
        // A release that does not exist: the answer comes from the database (404 when it is up).
        name: 'GET /design-api/v1/styles.json?version=',
        everyMs: 500,
        next: () => ({ method: 'GET', path: '/design-api/v1/styles.json?version=0.0.1' }),
        ok: (s) =>
          s.status === 404 && (s.body as { error?: { code?: string } })?.error?.code === 'release_not_found',
        needs: { postgres: 'required', redis: 'none' },
        envelope: 'plain',
      },
      // Its release is in memory: it can serve with Postgres or Redis out, so it stays ready.
      readinessProbe({ postgres: 'none', redis: 'none' }),
    ],
    async invariants() {
      const now = await call<{ version?: string }>(`${service.url}/design-api/v1/manifest.json`)
      return now.body.version === version ? [] : [`serves release ${now.body.version}, not ${version}`]
    },
  }
}
