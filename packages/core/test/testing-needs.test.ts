import { spawnSync } from 'node:child_process'
import path from 'node:path'
import { findProgram, missingNeeds } from '../src/testing-needs.ts'

const FIXTURE_DIR = path.join(__dirname, 'fixtures', 'needs')

interface JestReport {
  numPassedTests: number
  numFailedTests: number
  numPendingTests: number
  testResults: Array<{
    assertionResults: Array<{ title: string; status: string; failureMessages: string[] }>
  }>
}

/** The fixture suite in a jest of its own: what a run with (or without) CI set reports. */
function runFixture(ci: 'true' | 'false' | undefined): { report: JestReport; stderr: string } {
  const env: NodeJS.ProcessEnv = { ...process.env }
  delete env.CI
  delete env.QUARTET_NO_SUCH_VARIABLE
  if (ci) env.CI = ci
  const config = {
    rootDir: FIXTURE_DIR,
    testMatch: ['<rootDir>/*.fixture.ts'],
    testEnvironment: 'node',
    transform: {
      '^.+\\.ts$': [require.resolve('@swc/jest'), { jsc: { parser: { syntax: 'typescript' } } }],
    },
  }
  const child = spawnSync(
    process.execPath,
    [require.resolve('jest/bin/jest'), '--config', JSON.stringify(config), '--json', '--ci', '--runInBand'],
    { cwd: FIXTURE_DIR, env, encoding: 'utf8', timeout: 120_000 },
  )
  if (!child.stdout) throw new Error(`jest printed no report:\n${child.stderr}`)
  return { report: JSON.parse(child.stdout) as JestReport, stderr: child.stderr }
}

const results = (report: JestReport) => report.testResults.flatMap((r) => r.assertionResults)

describe('describeWhen and itWhen', () => {
  it('when CI is set and a program is missing, then the suite fails with one test naming the program and its package', () => {
    const { report } = runFixture('true')

    expect(report.numFailedTests).toBe(2)
    expect(report.numPendingTests).toBe(0)
    const failed = results(report).filter((r) => r.status === 'failed')
    expect(failed.map((r) => r.title)).toEqual([
      'missing program: quartet-no-such-program (Debian package quartet-no-such-package)',
      'a test whose variable is missing',
    ])
    expect(failed[0]!.failureMessages.join('\n')).toContain(
      'missing program: quartet-no-such-program (Debian package quartet-no-such-package)',
    )
    expect(failed[1]!.failureMessages.join('\n')).toContain(
      'missing environment variable: QUARTET_NO_SUCH_VARIABLE',
    )
    // What is there still runs, under CI as elsewhere.
    expect(
      results(report)
        .filter((r) => r.status === 'passed')
        .map((r) => r.title),
    ).toEqual(['runs'])
  })

  it.each([
    ['unset', undefined],
    ['"false"', 'false'],
  ] as const)(
    'when CI is %s and a program is missing, then the suite is skipped with a note saying what is missing',
    (_name, ci) => {
      const { report, stderr } = runFixture(ci)

      expect(report.numFailedTests).toBe(0)
      expect(report.numPassedTests).toBe(1)
      expect(
        results(report)
          .filter((r) => r.status === 'pending')
          .map((r) => r.title),
      ).toEqual(['would pass if it ran', 'a test whose variable is missing'])
      expect(stderr).toContain('SKIPPED "a suite whose program is missing"')
      expect(stderr).toContain('missing program: quartet-no-such-program')
      expect(stderr).toContain('missing environment variable: QUARTET_NO_SUCH_VARIABLE')
    },
  )

  it('when a program is on PATH or in an sbin directory, then findProgram finds it, and an absolute path stands for itself', () => {
    expect(findProgram('sh')).toMatch(/\/sh$/)
    expect(findProgram(process.execPath)).toBe(process.execPath)
    expect(findProgram('quartet-no-such-program')).toBeUndefined()
    expect(findProgram('/nonexistent/quartet-no-such-program')).toBeUndefined()
  })

  it('when a program is installed but does not run as asked, then it counts as missing', () => {
    expect(missingNeeds({ programs: [{ name: 'sh', runs: ['-c', 'exit 3'], debian: 'dash' }] })).toEqual([
      'program does not run: sh -c exit 3 failed (Debian package dash)',
    ])
    expect(missingNeeds({ programs: [{ name: 'sh', runs: ['-c', 'exit 0'] }] })).toEqual([])
  })

  it('when the embedded Postgres stands in for DATABASE_URL, then a suite that needs a Postgres server lacks it', () => {
    const saved = { url: process.env.DATABASE_URL, embedded: process.env.QUARTET_TEST_EMBEDDED_PG }
    try {
      process.env.DATABASE_URL = 'postgresql://127.0.0.1:1/x'
      process.env.QUARTET_TEST_EMBEDDED_PG = '1'
      expect(missingNeeds({ postgresServer: true })).toEqual([
        'missing Postgres server: DATABASE_URL is unset, and the embedded Postgres cannot stand in',
      ])
      delete process.env.QUARTET_TEST_EMBEDDED_PG
      expect(missingNeeds({ postgresServer: true })).toEqual([])
    } finally {
      for (const [name, value] of [
        ['DATABASE_URL', saved.url],
        ['QUARTET_TEST_EMBEDDED_PG', saved.embedded],
      ] as const)
        if (value === undefined) delete process.env[name]
        else process.env[name] = value
    }
  })
})
