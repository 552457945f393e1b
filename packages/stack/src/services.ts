import path from 'node:path'

/** The four services, their default ports, env prefixes and proxy host names. */
export interface ServiceSpec {
  name: 'design-archive' | 'key-info' | 'dns-manager' | 'pickup-share'
  envPrefix: string
  defaultPort: number
  /** Caddy host variable and its default. */
  hostVar: string
  defaultHost: string
  /** Paths a client calls, for the printed table. */
  paths: string
}

export const SERVICES: readonly ServiceSpec[] = [
  {
    name: 'design-archive',
    envPrefix: 'DESIGN_ARCHIVE',
    defaultPort: 3001,
    hostVar: 'DESIGN_HOST',
    defaultHost: 'design.localhost',
    paths: '/design-api/v1/*.json',
  },
  {
    name: 'key-info',
    envPrefix: 'KEY_INFO',
    defaultPort: 3002,
    hostVar: 'KEYS_HOST',
    defaultHost: 'keys.localhost',
    paths: '/api/v1/key, /api/v1/keys, /api/v1/usage',
  },
  {
    name: 'dns-manager',
    envPrefix: 'DNS_MANAGER',
    defaultPort: 3003,
    hostVar: 'DNS_HOST',
    defaultHost: 'dns.localhost',
    paths: '/rest, /api/v1/rest, /rpc, /graphql',
  },
  {
    name: 'pickup-share',
    envPrefix: 'PICKUP_SHARE',
    defaultPort: 3004,
    hostVar: 'SHARE_HOST',
    defaultHost: 'share.localhost',
    paths: '/, /pickup, /admin, /api/*',
  },
]

export const REPO_ROOT = path.resolve(__dirname, '..', '..', '..')

export function appDir(spec: ServiceSpec): string {
  return path.join(REPO_ROOT, 'apps', spec.name)
}
