import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { findProgram, type TestNeeds } from '@quartet/core/testing'
import { freePort } from './powerdns.ts'
import { run } from './programs.ts'

const PEBBLE = findProgram('pebble')
const LEGO = findProgram('lego')

/** What the ACME tests need besides PowerDNS: pebble, lego, and openssl for pebble's certificate. */
export const ACME_NEEDS = {
  programs: [
    { name: 'pebble', debian: 'pebble' },
    { name: 'lego', debian: 'lego' },
    { name: 'openssl', debian: 'openssl' },
  ],
} satisfies TestNeeds

export interface Pebble {
  directoryUrl: string
  /** The throwaway certificate pebble's HTTPS listener presents: what lego must trust. */
  caCertificate: string
  stop(): Promise<void>
}

/**
 * Let's Encrypt's ACME test server, on free loopback ports with a throwaway TLS certificate,
 * validating DNS-01 challenges against `dnsServer` (the test's PowerDNS). Without its random
 * sleeps, nonce rejections and authorization reuse, so a run is quick and takes the same path
 * each time.
 */
export async function startPebble(dnsServer: string): Promise<Pebble> {
  const dir = mkdtempSync(path.join(tmpdir(), 'pebble-'))
  const cert = path.join(dir, 'cert.pem')
  const key = path.join(dir, 'key.pem')
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      key,
      '-out',
      cert,
      '-days',
      '1',
      '-subj',
      '/CN=pebble test',
      '-addext',
      'subjectAltName=IP:127.0.0.1,DNS:localhost',
    ],
    { stdio: 'ignore' },
  )
  const port = await freePort()
  const managementPort = await freePort()
  const config = path.join(dir, 'pebble-config.json')
  writeFileSync(
    config,
    JSON.stringify({
      pebble: {
        listenAddress: `127.0.0.1:${port}`,
        managementListenAddress: `127.0.0.1:${managementPort}`,
        certificate: cert,
        privateKey: key,
        // Ports pebble would connect to for http-01 and tls-alpn-01; unused by DNS-01.
        httpPort: 5002,
        tlsPort: 5001,
        ocspResponderURL: '',
        externalAccountBindingRequired: false,
      },
    }),
  )
  const child: ChildProcess = spawn(PEBBLE!, ['-config', config, '-dnsserver', dnsServer], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      PEBBLE_VA_NOSLEEP: '1',
      PEBBLE_WFE_NONCEREJECT: '0',
      PEBBLE_AUTHZREUSE: '0',
    },
  })
  let log = ''
  const collect = (d: Buffer) => (log += d.toString())
  child.stdout?.on('data', collect)
  child.stderr?.on('data', collect)
  const deadline = Date.now() + 20_000
  while (!log.includes('ACME directory available')) {
    if (child.exitCode !== null) throw new Error(`pebble exited: ${log.slice(-2000)}`)
    if (Date.now() > deadline) {
      child.kill('SIGKILL')
      throw new Error(`pebble did not start: ${log.slice(-2000)}`)
    }
    await new Promise((r) => setTimeout(r, 50))
  }
  return {
    directoryUrl: `https://127.0.0.1:${port}/dir`,
    caCertificate: cert,
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r))
        child.kill('SIGTERM')
        const timer = setTimeout(() => child.kill('SIGKILL'), 5000)
        await exited
        clearTimeout(timer)
      }
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/**
 * Debian's lego, unmodified, obtaining one certificate for `domains` from pebble through the
 * `httpreq` DNS provider pointed at dns-manager. Answers lego's exit status and output, and the
 * certificate it wrote (PEM) when it succeeded.
 */
export async function legoObtain(options: {
  pebble: Pebble
  endpoint: string
  username: string
  password: string
  resolver: string
  domains: string[]
  mode?: 'RAW'
}): Promise<{ status: number | null; output: string; certificate: string | null }> {
  const dir = mkdtempSync(path.join(tmpdir(), 'lego-'))
  try {
    const result = await run(
      LEGO!,
      [
        '--server',
        options.pebble.directoryUrl,
        '--accept-tos',
        '--email',
        'holder@example.test',
        '--path',
        dir,
        '--dns',
        'httpreq',
        '--dns.resolvers',
        options.resolver,
        // The NS names of a test zone do not resolve to the test's PowerDNS port: lego asks the
        // resolver above only, which is PowerDNS itself (authoritative, no caches).
        '--dns.disable-cp',
        ...options.domains.flatMap((d) => ['--domains', d]),
        'run',
      ],
      {
        timeoutMs: 120_000,
        env: {
          ...process.env,
          LEGO_CA_CERTIFICATES: options.pebble.caCertificate,
          HTTPREQ_ENDPOINT: options.endpoint,
          HTTPREQ_USERNAME: options.username,
          HTTPREQ_PASSWORD: options.password,
          ...(options.mode ? { HTTPREQ_MODE: options.mode } : {}),
          HTTPREQ_PROPAGATION_TIMEOUT: '30',
          HTTPREQ_POLLING_INTERVAL: '1',
        },
      },
    )
    // lego names the files after the first domain, `*` spelled `_`.
    const file = path.join(dir, 'certificates', `${options.domains[0]!.replace('*', '_')}.crt`)
    return { ...result, certificate: existsSync(file) ? readFileSync(file, 'utf8') : null }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
