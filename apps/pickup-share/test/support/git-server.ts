import { execFileSync, spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import os from 'node:os'
import path from 'node:path'

export interface GitServer {
  url: string
  root: string
  /** Authorization headers seen (to prove the token was sent). */
  authorizations: string[]
  createRepo(owner: string, name: string): { remoteUrl: string; gitDir: string }
  close(): Promise<void>
}

const listen = async (server: http.Server): Promise<string> => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

/**
 * A real smart-HTTP git server on loopback: Debian git's `git http-backend` (CGI) behind a small
 * node server that demands HTTP basic auth with `username:token`, like a private GitHub repo.
 */
export async function startGitServer(options: { username: string; token: string }): Promise<GitServer> {
  const root = mkdtempSync(path.join(os.tmpdir(), 'git-http-'))
  const expected = `Basic ${Buffer.from(`${options.username}:${options.token}`).toString('base64')}`
  const authorizations: string[] = []
  const server = http.createServer((req, res) => {
    const auth = req.headers.authorization
    if (auth) authorizations.push(auth)
    if (auth !== expected) {
      res.writeHead(401, { 'WWW-Authenticate': 'Basic realm="git"' }).end()
      return
    }
    const url = new URL(req.url ?? '/', 'http://x')
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      GIT_PROJECT_ROOT: root,
      GIT_HTTP_EXPORT_ALL: '1',
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CONFIG_GLOBAL: '/dev/null',
      PATH_INFO: decodeURIComponent(url.pathname),
      QUERY_STRING: url.search.slice(1),
      REQUEST_METHOD: req.method ?? 'GET',
      CONTENT_TYPE: req.headers['content-type'] ?? '',
      REMOTE_USER: options.username,
      REMOTE_ADDR: '127.0.0.1',
    }
    if (req.headers['content-length']) env.CONTENT_LENGTH = req.headers['content-length']
    if (req.headers['content-encoding']) env.HTTP_CONTENT_ENCODING = String(req.headers['content-encoding'])
    if (req.headers['git-protocol']) env.GIT_PROTOCOL = String(req.headers['git-protocol'])
    const cgi = spawn('git', ['http-backend'], { env })
    req.pipe(cgi.stdin)
    cgi.stdin.on('error', () => {})
    let head = Buffer.alloc(0)
    let headersDone = false
    cgi.stdout.on('data', (chunk: Buffer) => {
      if (headersDone) return void res.write(chunk)
      head = Buffer.concat([head, chunk])
      const sep = head.indexOf('\r\n\r\n') >= 0 ? head.indexOf('\r\n\r\n') : head.indexOf('\n\n')
      if (sep < 0) return
      const sepLen = head[sep] === 13 ? 4 : 2
      let status = 200
      for (const line of head.subarray(0, sep).toString('latin1').split(/\r?\n/)) {
        const i = line.indexOf(':')
        const name = line.slice(0, i).trim()
        const value = line.slice(i + 1).trim()
        if (name.toLowerCase() === 'status') status = Number(value.split(' ')[0])
        else res.setHeader(name, value)
      }
      res.statusCode = status
      headersDone = true
      res.write(head.subarray(sep + sepLen))
    })
    cgi.on('close', () => res.end())
  })
  const url = await listen(server)
  return {
    url,
    root,
    authorizations,
    createRepo(owner, name) {
      const gitDir = path.join(root, owner, `${name}.git`)
      mkdirSync(gitDir, { recursive: true })
      execFileSync('git', ['init', '--bare', '--quiet', '--initial-branch=main', gitDir])
      execFileSync('git', ['--git-dir', gitDir, 'config', 'http.receivepack', 'true'])
      return { remoteUrl: `${url}/${owner}/${name}.git`, gitDir }
    },
    close: async () => {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
      rmSync(root, { recursive: true, force: true })
    },
  }
}

export interface MirrorServer {
  url: string
  /** `{owner}/{repo}/{sha}/{path}` template of this mirror. */
  template: string
  delayMs: number
  failing: boolean
  /** Healthy for probes, but answers 404 to every GET (a mirror that has not caught up). */
  lagging: boolean
  hits: Array<{ method: string; path: string }>
  close(): Promise<void>
}

/**
 * A raw.githubusercontent.com look-alike serving files of bare repositories under `root` by
 * commit: /{owner}/{repo}/{sha}/{path}. Latency and failure are injected per server.
 */
export async function startMirror(root: string, delayMs: number, failing = false): Promise<MirrorServer> {
  const mirror = { delayMs, failing, lagging: false, hits: [] } as unknown as MirrorServer
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x')
    mirror.hits.push({ method: req.method ?? 'GET', path: decodeURIComponent(url.pathname) })
    setTimeout(() => {
      if (mirror.failing) return void res.writeHead(503).end('mirror down')
      if (mirror.lagging && req.method === 'GET') return void res.writeHead(404).end('not yet')
      const [owner, repo, sha, ...rest] = url.pathname.split('/').filter(Boolean).map(decodeURIComponent)
      const gitDir = path.join(root, owner ?? '', `${repo}.git`)
      const spec = `${sha}:${rest.join('/')}`
      let size: number
      try {
        size = Number(execFileSync('git', ['--git-dir', gitDir, 'cat-file', '-s', spec], { stdio: 'pipe' }))
      } catch {
        return void res.writeHead(404).end('not found')
      }
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(size) })
      if (req.method === 'HEAD') return void res.end()
      spawn('git', ['--git-dir', gitDir, 'cat-file', 'blob', spec]).stdout.pipe(res)
    }, mirror.delayMs)
  })
  mirror.url = await listen(server)
  mirror.template = `${mirror.url}/{owner}/{repo}/{sha}/{path}`
  mirror.close = async () => {
    server.closeAllConnections()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  }
  return mirror
}
