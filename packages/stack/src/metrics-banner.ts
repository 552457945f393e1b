import type { ServiceSpec } from './services.ts'

const nonEmpty = (value: string | undefined) => (value === undefined || value === '' ? undefined : value)

/**
 * Where a service answers `/metrics`, as its config reads the environment (the prefixed
 * variable wins, core's config.ts): on its own listener (METRICS_PORT), and on the public port
 * only with the bearer token (METRICS_TOKEN). Without either the public port answers 404 there,
 * by design: metrics are for the scraper, not for the world.
 */
export function metricsWhere(spec: ServiceSpec, env: NodeJS.ProcessEnv): string {
  const setting = (key: string) => nonEmpty(env[`${spec.envPrefix}_${key}`]) ?? nonEmpty(env[key])
  const port = setting('METRICS_PORT')
  const host = setting('METRICS_HOST') ?? setting('HOST') ?? '127.0.0.1'
  const places: string[] = []
  if (port === '0')
    places.push('its own listener on a free port (METRICS_PORT=0; the port is in its start log)')
  else if (port !== undefined)
    places.push(`http://${host.includes(':') ? `[${host}]` : host}:${port}/metrics`)
  if (setting('METRICS_TOKEN') !== undefined)
    places.push('/metrics on its public port with Authorization: Bearer $METRICS_TOKEN')
  return places.length > 0
    ? places.join('; and ')
    : 'not served (404 on the public port): set METRICS_PORT, or METRICS_TOKEN for the public port'
}

/** The banner's lines on metrics, one per service. */
export function metricsBanner(specs: readonly ServiceSpec[], env: NodeJS.ProcessEnv, width: number): string {
  return [
    'Metrics (for the scraper, not on the public port without a token):',
    ...specs.map((spec) => `  ${spec.name.padEnd(width)}  ${metricsWhere(spec, env)}`),
  ].join('\n')
}
