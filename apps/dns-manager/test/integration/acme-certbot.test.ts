import { X509Certificate } from 'node:crypto'
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { request } from '@quartet/core/testing'
import { useDeps } from '../helpers.ts'
import { ACME_NEEDS, type Pebble, startPebble } from '../support/acme.ts'
import { dig, powerDnsApp, powerDnsDescribe, usePowerDns } from '../support/powerdns.ts'
import { listenOnLoopback, run } from '../support/programs.ts'

/**
 * certbot, unmodified, with the hooks this repository ships (hooks/certbot-dns-manager.sh, its
 * credentials in a 0600 file) against pebble, which validates DNS-01 at the real PowerDNS
 * dns-manager writes to (issue 43). The point is the renewal: `certbot renew` runs from a timer
 * or cron with a clean environment, and certbot keeps only the hooks' command lines, so hooks
 * that read the key from the environment failed with 401 at the first renewal.
 */
const deps = useDeps()

const CERTBOT = '/usr/bin/certbot'
const HOOK = path.join(__dirname, '../../hooks/certbot-dns-manager.sh')
const describeWith = powerDnsDescribe({
  also: { programs: [...ACME_NEEDS.programs, { name: CERTBOT, debian: 'certbot' }] },
})

describeWith('certbot with the shipped hooks, pebble and PowerDNS (DNS-01)', () => {
  const pdns = usePowerDns()
  let pebble: Pebble
  let dir: string
  beforeAll(async () => {
    pebble = await startPebble(`127.0.0.1:${pdns.dnsPort}`)
    dir = mkdtempSync(path.join(tmpdir(), 'certbot-'))
  }, 60_000)
  afterAll(async () => {
    await pebble?.stop()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  const sansOf = (pem: string) =>
    (new X509Certificate(pem).subjectAltName ?? '')
      .split(', ')
      .map((s) => s.replace(/^DNS:/, ''))
      .sort()

  it('when certbot renews under env -i (no key or secret in the environment), then the hooks read the 0600 credentials file and a new certificate is issued', async () => {
    const { app, zone, a } = await powerDnsApp(deps, pdns, { prefix: 'cb', timeoutMs: 2000 })
    const made = await request(app)
      .post('/rest/subdomains')
      .set(a.headers)
      .send({ subdomain: 'carol', rootdomain: zone })
      .expect(201)
    const name = `carol.${zone}`
    // An ACME-only credential, as the README advises for a web server.
    const key = (
      await request(app)
        .post('/rest/keys')
        .set(a.headers)
        .send({ scope: 'acme', subdomain_id: made.body.subdomain.id })
        .expect(201)
    ).body.key as { api_key: string; api_secret: string }
    const server = await listenOnLoopback(app)
    try {
      const credentials = path.join(dir, 'dns-manager.ini')
      writeFileSync(
        credentials,
        [
          `dns_manager_endpoint = http://127.0.0.1:${server.port}/rest/acme/httpreq`,
          `dns_manager_key = ${key.api_key}`,
          `dns_manager_secret = ${key.api_secret}`,
          '',
        ].join('\n'),
      )
      chmodSync(credentials, 0o600)
      const dirs = [
        '--config-dir',
        path.join(dir, 'config'),
        '--work-dir',
        path.join(dir, 'work'),
        '--logs-dir',
        path.join(dir, 'logs'),
      ]
      // The one variable either run gets besides what cron gives (PATH): trust in pebble's
      // throwaway CA, which certbot reads from REQUESTS_CA_BUNDLE and does not keep in its
      // renewal configuration (a public CA needs none: the system's store).
      const cronLike = { PATH: '/usr/bin:/bin', REQUESTS_CA_BUNDLE: pebble.caCertificate }

      const obtained = await run(
        CERTBOT,
        [
          'certonly',
          '--non-interactive',
          '--agree-tos',
          '--email',
          'holder@example.test',
          '--server',
          pebble.directoryUrl,
          ...dirs,
          '--manual',
          '--preferred-challenges',
          'dns',
          '--manual-auth-hook',
          `${HOOK} present ${credentials}`,
          '--manual-cleanup-hook',
          `${HOOK} cleanup ${credentials}`,
          '-d',
          name,
          '-d',
          `*.${name}`,
        ],
        { timeoutMs: 120_000, env: cronLike },
      )
      expect({ status: obtained.status, output: obtained.status === 0 ? '' : obtained.output }).toEqual({
        status: 0,
        output: '',
      })
      const certFile = path.join(dir, 'config', 'live', name, 'cert.pem')
      const first = readFileSync(certFile, 'utf8')
      expect(sansOf(first)).toEqual([`*.${name}`, name].sort())

      // What the timer runs, with nothing of ours in the environment: `env -i`.
      const renewed = await run(
        'env',
        [
          '-i',
          `REQUESTS_CA_BUNDLE=${pebble.caCertificate}`,
          CERTBOT,
          'renew',
          '--force-renewal',
          '--non-interactive',
          '--no-random-sleep-on-renew',
          ...dirs,
        ],
        { timeoutMs: 120_000 },
      )
      expect({ status: renewed.status, output: renewed.status === 0 ? '' : renewed.output }).toEqual({
        status: 0,
        output: '',
      })
      const second = readFileSync(certFile, 'utf8')
      expect(new X509Certificate(second).serialNumber).not.toBe(new X509Certificate(first).serialNumber)
      expect(sansOf(second)).toEqual([`*.${name}`, name].sort())
      // certbot kept the hooks' command lines (with the file's path), not the credentials.
      const renewal = readFileSync(path.join(dir, 'config', 'renewal', `${name}.conf`), 'utf8')
      expect(renewal).toContain(`manual_auth_hook = ${HOOK} present ${credentials}`)
      expect(renewal).not.toContain(key.api_secret)
    } finally {
      await server.close()
    }
    expect(dig(pdns, `_acme-challenge.${name}`, 'TXT')).toEqual([])
    // Two issuances, each presenting and cleaning up the name's two values.
    const audit = await deps.db.auditLog.findMany({
      where: { accountId: a.accountId, operation: { startsWith: 'acme.' } },
    })
    expect(audit.map((e) => e.outcome)).toEqual(Array(8).fill('ok'))
  }, 300_000)
})
