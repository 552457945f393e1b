import { spawnSync } from 'node:child_process'
import { accessSync, constants, existsSync, statSync } from 'node:fs'
import path from 'node:path'

/**
 * Suites that need something from the machine — a program, a file a package installs, an
 * environment variable, a Postgres server — declare it here instead of choosing `describe.skip`
 * themselves. Under CI (`CI` set) a missing need fails the suite with one test named after what is
 * missing, because CI installs and starts everything the tests use and a suite that silently
 * skips there proves nothing. Elsewhere the suite is skipped, with one warning saying why.
 */

export interface ProgramNeed {
  /** A command looked up on PATH and the sbin directories, or an absolute path. */
  name: string
  /** The Debian package that installs it, for the message. */
  debian?: string
  /** More for the message: another way to provide it. */
  hint?: string
  /**
   * Arguments it is run with to count as present (exit status 0), for a program that is
   * installed but unusable until something else runs (`docker info` needs the engine).
   */
  runs?: string[]
}

export interface FileNeed {
  path: string
  debian?: string
}

export interface TestNeeds {
  programs?: Array<string | ProgramNeed>
  files?: Array<string | FileNeed>
  /** Environment variables that must be set (non-empty). */
  env?: string[]
  /**
   * A Postgres server named by DATABASE_URL, not the embedded one jest's global setup starts
   * when DATABASE_URL is unset (one session at a time, no statement cancelling).
   */
  postgresServer?: boolean
}

const SBIN = ['/usr/local/sbin', '/usr/sbin', '/sbin']

function isExecutableFile(file: string): boolean {
  try {
    accessSync(file, constants.X_OK)
    return statSync(file).isFile()
  } catch {
    return false
  }
}

/**
 * Where `name` runs from: itself when it is a path, else the first executable of that name on
 * PATH or in the sbin directories (not on a non-root PATH, but where pdns_server lives).
 */
export function findProgram(name: string): string | undefined {
  if (name.includes('/')) return isExecutableFile(name) ? name : undefined
  const dirs = [...(process.env.PATH ?? '').split(path.delimiter).filter(Boolean), ...SBIN]
  for (const dir of dirs) {
    const candidate = path.join(dir, name)
    if (isExecutableFile(candidate)) return candidate
  }
  return undefined
}

function source(debian: string | undefined, hint: string | undefined): string {
  const parts = [debian && `Debian package ${debian}`, hint].filter(Boolean)
  return parts.length ? ` (${parts.join('; ')})` : ''
}

/** What of `needs` this machine lacks, one line each; empty when everything is there. */
export function missingNeeds(needs: TestNeeds): string[] {
  const missing: string[] = []
  for (const need of needs.programs ?? []) {
    const program = typeof need === 'string' ? { name: need } : need
    const found = findProgram(program.name)
    const why = source(program.debian, program.hint)
    if (!found) missing.push(`missing program: ${program.name}${why}`)
    else if (program.runs) {
      const ran = spawnSync(found, program.runs, { stdio: 'ignore', timeout: 30_000 })
      if (ran.status !== 0)
        missing.push(`program does not run: ${program.name} ${program.runs.join(' ')} failed${why}`)
    }
  }
  for (const need of needs.files ?? []) {
    const file = typeof need === 'string' ? { path: need } : need
    if (!existsSync(file.path)) missing.push(`missing file: ${file.path}${source(file.debian, undefined)}`)
  }
  for (const name of needs.env ?? [])
    if (!process.env[name]) missing.push(`missing environment variable: ${name}`)
  if (needs.postgresServer && (!process.env.DATABASE_URL || process.env.QUARTET_TEST_EMBEDDED_PG))
    missing.push('missing Postgres server: DATABASE_URL is unset, and the embedded Postgres cannot stand in')
  return missing
}

/** `CI` set, as CI runners set it (`CI=false` or `CI=0` is not CI). */
function underCi(): boolean {
  const ci = process.env.CI
  return Boolean(ci) && !/^(0|false)$/i.test(ci!.trim())
}

const warned = new Set<string>()

function skipNote(title: string, missing: string[]): void {
  const note = `SKIPPED "${title}" (set CI and it fails instead):\n  ${missing.join('\n  ')}`
  if (warned.has(note)) return
  warned.add(note)
  console.warn(note)
}

function missingError(missing: string[]): Error {
  return new Error(
    `${missing.join('\n')}\nUnder CI a missing need fails the suite: CI installs and starts what the tests use.`,
  )
}

/**
 * `describe` when the machine has what `needs` lists. Otherwise, under CI, a suite of the same
 * title with one failing test named after what is missing (the suite's own body is not run, so
 * its hooks do not fail on top); elsewhere `describe.skip`, with a warning.
 */
export function describeWhen(needs: TestNeeds, title: string, suite: () => void): void {
  const missing = missingNeeds(needs)
  if (!missing.length) {
    describe(title, suite)
  } else if (underCi()) {
    describe(title, () => {
      test(missing.join('; '), () => {
        throw missingError(missing)
      })
    })
  } else {
    skipNote(title, missing)
    describe.skip(title, suite)
  }
}

/** `it` when the machine has what `needs` lists; otherwise as describeWhen, for one test. */
export function itWhen(needs: TestNeeds, title: string, fn: jest.ProvidesCallback, timeout?: number): void {
  const missing = missingNeeds(needs)
  if (!missing.length) {
    it(title, fn, timeout)
  } else if (underCi()) {
    it(title, () => {
      throw missingError(missing)
    })
  } else {
    skipNote(title, missing)
    it.skip(title, fn, timeout)
  }
}
