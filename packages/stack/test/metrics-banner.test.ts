import { metricsBanner, metricsWhere } from '../src/metrics-banner.ts'
import { SERVICES } from '../src/services.ts'

const dns = SERVICES.find((s) => s.name === 'dns-manager')!

describe('the banner says where /metrics is', () => {
  it('when neither METRICS_PORT nor METRICS_TOKEN is set, then it says /metrics is not served and how to get it', () => {
    expect(metricsWhere(dns, {})).toBe(
      'not served (404 on the public port): set METRICS_PORT, or METRICS_TOKEN for the public port',
    )
  })

  it('when METRICS_PORT is set (the prefixed one winning), then it names that listener', () => {
    expect(metricsWhere(dns, { METRICS_PORT: '9100' })).toBe('http://127.0.0.1:9100/metrics')
    expect(metricsWhere(dns, { METRICS_PORT: '9100', DNS_MANAGER_METRICS_PORT: '9103', HOST: '::1' })).toBe(
      'http://[::1]:9103/metrics',
    )
    expect(metricsWhere(dns, { METRICS_PORT: '0' })).toMatch(/free port/)
  })

  it('when METRICS_TOKEN is set, then it says the public port answers with the bearer token', () => {
    expect(metricsWhere(dns, { DNS_MANAGER_METRICS_TOKEN: 'x'.repeat(16) })).toBe(
      '/metrics on its public port with Authorization: Bearer $METRICS_TOKEN',
    )
  })

  it('when the banner is printed, then it has one line per service and never claims the public port answers without a token', () => {
    const text = metricsBanner(SERVICES, { KEY_INFO_METRICS_PORT: '9102' }, 14)
    expect(text.split('\n')).toHaveLength(1 + SERVICES.length)
    expect(text).toContain('key-info        http://127.0.0.1:9102/metrics')
    expect(text).not.toMatch(/Every service answers .*\/metrics/)
  })
})
