import type { ServiceName } from '@quartet/faults/service-process'
import type { Draft } from './draft.ts'
import type { WireOutcome } from './wire.ts'

/**
 * Defects the suite finds whose fix is on its way in another branch, tolerated until it lands so
 * that the suite stays green meanwhile. Each is counted in the summary (`tolerated: …`), never
 * hidden. Remove an entry when its fix is on main: the suite then holds the service to it.
 */
export const TOLERATED: ReadonlyArray<{
  why: string
  matches(service: ServiceName, draft: Draft, outcome: WireOutcome): boolean
}> = [
  {
    // pickup-share answers a refused upload (401, 413) and closes while the client is still
    // sending, so the kernel may reset the connection before the client reads the answer. The
    // lingering close for refused uploads (issue 23 item 3, apps/pickup-share/src/http/
    // upload-connection.ts) comes with the upload-size work.
    why: 'reset on a refused pickup-share upload',
    matches: (service, draft, outcome) =>
      service === 'pickup-share' &&
      !outcome.ok &&
      outcome.failure.kind === 'reset' &&
      draft.method === 'PUT' &&
      /^\/api\/(blob|repo)\/upload\b/i.test(draft.path),
  },
]
