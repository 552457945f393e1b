import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { builtEntry } from '../src/testing-built.ts'

describe('builtEntry (tests that run an app’s bundle)', () => {
  let app: string
  beforeEach(() => {
    app = path.join(mkdtempSync(path.join(os.tmpdir(), 'built-')), 'demo')
    mkdirSync(path.join(app, 'src', 'store'), { recursive: true })
    writeFileSync(path.join(app, 'src', 'store', 'db.ts'), '')
  })
  afterEach(() => rmSync(path.dirname(app), { recursive: true, force: true }))

  it('when the bundle is missing, then it throws naming the build command', () => {
    expect(() => builtEntry(app, 'cli')).toThrow('run `pnpm turbo run build --filter=@quartet/demo` first')
  })

  it('when a source is newer than the bundle, then it throws naming that source', () => {
    mkdirSync(path.join(app, 'dist'))
    writeFileSync(path.join(app, 'dist', 'cli.js'), '')
    const past = new Date(Date.now() - 60_000)
    utimesSync(path.join(app, 'dist', 'cli.js'), past, past)
    expect(() => builtEntry(app, 'cli')).toThrow(/is older than .*store\/db\.ts/)
  })

  it('when the bundle is newer than every source, then it is the path of dist/<name>.js', () => {
    mkdirSync(path.join(app, 'dist'))
    writeFileSync(path.join(app, 'dist', 'cli.js'), '')
    const future = new Date(Date.now() + 60_000)
    utimesSync(path.join(app, 'dist', 'cli.js'), future, future)
    expect(builtEntry(app, 'cli')).toBe(path.join(app, 'dist', 'cli.js'))
  })
})
