import { execFile } from 'node:child_process'
import path from 'node:path'
import { useTestDeps } from '@quartet/core/testing'
import { builtEntry } from '@quartet/core/testing/built'
import { createDb } from '../../src/store/db.ts'
import { createReleaseRepository } from '../../src/store/release-repository.ts'
import { contentDir, copyOfContent, editDocument, migrationsDir } from '../helpers.ts'

const deps = useTestDeps({ migrationsDir, prefix: 'design_cli', createDb })
const CLI = builtEntry(path.join(__dirname, '..', '..'), 'cli')

interface CliResult {
  code: number
  stdout: string
  stderr: string
}

/** Runs the built CLI (`node dist/cli.js …`) against this file's test schema, as an operator would. */
function cli(...args: string[]): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [CLI, ...args],
      {
        cwd: path.join(__dirname, '..', '..'),
        env: {
          PATH: process.env.PATH,
          DATABASE_URL: deps.database.url,
          DATABASE_SCHEMA: deps.database.schema,
          LOG_LEVEL: 'silent',
        },
        timeout: 60_000,
      },
      (error, stdout, stderr) =>
        resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    )
  })
}

describe('content CLI', () => {
  jest.setTimeout(120_000)

  it('when an operator publishes, lists, breaks a publish and rolls back, then the CLI reports each step in JSON', async () => {
    const first = await cli('content:publish', contentDir, '--version', 'cli-1')
    expect(first.code).toBe(0)
    expect(JSON.parse(first.stdout)).toMatchObject({ version: 'cli-1', active: true })

    const dir = copyOfContent()
    editDocument(dir, 'quality-gates.json', (doc) => {
      ;(doc.gates as Array<Record<string, unknown>>)[0]!.category = 'vibes'
    })
    const broken = await cli('content:publish', dir, '--version', 'cli-2')
    expect(broken.code).toBe(1)
    expect(JSON.parse(broken.stderr).error).toMatchObject({
      code: 'content_invalid',
      message: expect.stringContaining('quality-gates.json /gates/0/category: must be one of'),
    })

    editDocument(dir, 'quality-gates.json', (doc) => {
      ;(doc.gates as Array<Record<string, unknown>>)[0]!.category = 'accessibility'
    })
    expect((await cli('content:publish', dir, '--version', 'cli-2')).code).toBe(0)

    const listed = JSON.parse((await cli('content:list')).stdout) as {
      releases: Array<{ version: string; active: boolean }>
    }
    expect(listed.releases.map((r) => [r.version, r.active])).toEqual([
      ['cli-2', true],
      ['cli-1', false],
    ])

    const rollback = await cli('content:activate', 'cli-1')
    expect(JSON.parse(rollback.stdout)).toEqual({ version: 'cli-1', active: true })
    expect(await createReleaseRepository(deps.db, deps.database.schema).activeVersion()).toBe('cli-1')

    const unknown = await cli('content:activate', 'cli-404')
    expect(unknown.code).toBe(1)
    expect(JSON.parse(unknown.stderr).error.code).toBe('release_not_found')
  })

  it('when a folder is validated, then problems are listed without touching the database', async () => {
    expect(JSON.parse((await cli('content:validate', contentDir)).stdout)).toEqual({ valid: true })
    const missing = await cli('content:validate', '/nonexistent/folder')
    expect(missing.code).toBe(1)
    expect(JSON.parse(missing.stderr).error.message).toContain('folder does not exist')
  })
})
