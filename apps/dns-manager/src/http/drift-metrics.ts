import client from 'prom-client'
import type { DriftObserver } from '../domain/deps.ts'

/**
 * Convergence with the upstream, for the scraper. Alert on
 * `increase(dns_manager_upstream_repairs_total{source="anti_entropy"}[1h]) > 0`: the upstream
 * served something the database does not hold that no failed call explains (an edit made
 * upstream by hand, or a bug). Repairs with source="repair" follow calls that timed out or failed.
 */
export function driftMetrics(onUnknownOutcome?: () => void) {
  const repairs = new client.Counter({
    name: 'dns_manager_upstream_repairs_total',
    help: 'RRsets the upstream served differently from the database, made to match it (source: repair after an unknown outcome, or anti_entropy)',
    labelNames: ['source', 'action'] as const,
    registers: [],
  })
  const unknown = new client.Counter({
    name: 'dns_manager_upstream_unknown_outcomes_total',
    help: 'RRsets marked for repair because an upstream call timed out or failed with its outcome unknown',
    registers: [],
  })
  for (const source of ['repair', 'anti_entropy'])
    for (const action of ['replace', 'delete']) repairs.labels(source, action).inc(0)
  const observer: DriftObserver = {
    repaired: (r) => repairs.labels(r.source, r.action).inc(),
    unknownOutcome: (_zone, count) => {
      unknown.inc(count)
      onUnknownOutcome?.()
    },
  }
  return {
    observer,
    /** Adds these metrics to the app's registry (created with the app, after the service). */
    register(target: client.Registry) {
      target.registerMetric(repairs)
      target.registerMetric(unknown)
    },
  }
}
