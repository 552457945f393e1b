#!/usr/bin/env node
// A Node.js binary of another major for the test matrix, from the npm registry (the only registry
// these machines reach): the platform package `node-<os>-<arch>` that the `node` npm package
// installs holds the official build as `bin/node`. It is unpacked once into a cache outside the
// workspace (so it never shadows the system `node` of pnpm's scripts) and checked by running it.
//
//   node scripts/node-runtime.mjs 24   → prints the binary's path
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync } from 'node:fs'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'

/** The exact releases the matrix runs; `infra/docker/Dockerfile` builds on the same major. */
export const PINNED = { 24: '24.21.0' }

export function cacheRoot() {
  const base = process.env.XDG_CACHE_HOME || join(homedir(), '.cache')
  return join(base, 'quartet', 'node')
}

/** Path of a working `node` of `major`, downloaded on first use. */
export function ensureNode(major) {
  if (Number(major) === Number(process.versions.node.split('.')[0])) return process.execPath
  const version = PINNED[major]
  if (!version) throw new Error(`no pinned Node.js release for major ${major} (scripts/node-runtime.mjs)`)
  const pkg = `node-${process.platform}-${process.arch}`
  const dir = join(cacheRoot(), `${version}-${process.platform}-${process.arch}`)
  const bin = join(dir, 'bin', 'node')
  if (!existsSync(bin)) {
    mkdirSync(cacheRoot(), { recursive: true })
    const tmp = `${dir}.tmp-${process.pid}`
    rmSync(tmp, { recursive: true, force: true })
    mkdirSync(tmp)
    // `npm pack` fetches the tarball without running any install script; tar unpacks it.
    const tarball = execFileSync('npm', ['pack', `${pkg}@${version}`, '--silent'], {
      cwd: tmp,
      encoding: 'utf8',
    })
      .trim()
      .split('\n')
      .pop()
    execFileSync('tar', ['-xzf', tarball, '--strip-components=1'], { cwd: tmp })
    rmSync(join(tmp, tarball))
    if (!readdirSync(join(tmp, 'bin')).includes('node')) throw new Error(`${pkg}@${version} has no bin/node`)
    rmSync(dir, { recursive: true, force: true })
    renameSync(tmp, dir)
  }
  const reported = execFileSync(bin, ['--version'], { encoding: 'utf8' }).trim()
  if (reported !== `v${version}`) throw new Error(`${bin} reports ${reported}, expected v${version}`)
  return bin
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const major = process.argv[2]
  if (!major) {
    console.error('usage: node scripts/node-runtime.mjs <major>')
    process.exit(2)
  }
  console.log(ensureNode(major))
}
