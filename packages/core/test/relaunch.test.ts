import { execFile, fork } from 'node:child_process'
import path from 'node:path'
import { MALLOC_ENVIRONMENT, missingMallocSettings } from '../src/malloc-env.ts'
import { COMMAND_LINE_FLAGS, missingCommandLineFlags } from '../src/v8-flags.ts'

/**
 * A service puts the V8 flags that count only on node's command line there itself, by
 * re-executing node (`process.execve`, Node ≥ 22.15) as the first thing its main.ts does, with
 * glibc's malloc settings in its environment, and keeps a flag or setting the operator gave.
 */

describe('missingCommandLineFlags', () => {
  it('names every flag when node was given none', () => {
    expect(missingCommandLineFlags([], '')).toEqual([...COMMAND_LINE_FLAGS])
    expect(missingCommandLineFlags(['--import', 'tsx', '--enable-source-maps'])).toEqual([
      ...COMMAND_LINE_FLAGS,
    ])
  })

  it('keeps what the operator gave, in any spelling, on the command line or in NODE_OPTIONS', () => {
    expect(missingCommandLineFlags(['--max-semi-space-size=64'])).toEqual(['--no-maglev'])
    expect(missingCommandLineFlags([], '--max_semi_space_size=8  --maglev')).toEqual([])
    expect(missingCommandLineFlags(['--no-maglev'], '--max-old-space-size=512')).toEqual([
      '--max-semi-space-size=16',
    ])
  })

  it('does not read a value as a flag', () => {
    // `--title maglev`: only arguments that start with a dash name flags.
    expect(missingCommandLineFlags(['--title', 'maglev', '--require', 'max-semi-space-size'])).toEqual([
      ...COMMAND_LINE_FLAGS,
    ])
  })
})

describe('missingMallocSettings', () => {
  it('names every setting the environment lacks, and keeps what the operator set', () => {
    expect(missingMallocSettings({})).toEqual(MALLOC_ENVIRONMENT)
    expect(missingMallocSettings({ MALLOC_ARENA_MAX: '8', PATH: '/bin' })).toEqual({
      MALLOC_MMAP_THRESHOLD_: '131072',
      MALLOC_TRIM_THRESHOLD_: '131072',
    })
    expect(missingMallocSettings({ ...MALLOC_ENVIRONMENT, MALLOC_ARENA_MAX: '' })).toEqual({})
  })
})

describe('relaunch (a real child process)', () => {
  const FIXTURE = path.join(__dirname, 'fixtures', 'relaunched.ts')
  const hasExecve = typeof (process as { execve?: unknown }).execve === 'function'

  function run(
    nodeArgs: string[],
    env: NodeJS.ProcessEnv = {},
  ): Promise<{
    spawnedPid: number
    pid: number
    execArgv: string[]
    args: string[]
    malloc: Record<string, string>
  }> {
    return new Promise((resolve, reject) => {
      const child = execFile(
        process.execPath,
        [...nodeArgs, '--import', 'tsx', FIXTURE, 'one', '--two', 'three four'],
        { cwd: path.join(__dirname, '..'), env: { ...withoutMalloc(process.env), NODE_OPTIONS: '', ...env } },
        (err, stdout, stderr) => {
          if (err) return reject(new Error(`${err.message}\n${stderr}`))
          resolve({ spawnedPid: child.pid!, ...JSON.parse(stdout) })
        },
      )
    })
  }

  it('runs as the same process, with the flags, its own flags and its arguments', async () => {
    const ran = await run(['--stack-size=900'])
    expect(ran.pid).toBe(ran.spawnedPid)
    expect(ran.args).toEqual(['one', '--two', 'three four'])
    expect(ran.execArgv).toEqual(expect.arrayContaining(['--stack-size=900', '--import', 'tsx']))
    if (hasExecve) {
      expect(ran.execArgv.slice(0, COMMAND_LINE_FLAGS.length)).toEqual([...COMMAND_LINE_FLAGS])
      expect(ran.malloc).toEqual(MALLOC_ENVIRONMENT)
    } else {
      // Node 20 has no process.execve, and its V8 defaults are what the flags set.
      for (const flag of COMMAND_LINE_FLAGS) expect(ran.execArgv).not.toContain(flag)
      expect(ran.malloc).toEqual({})
    }
  })

  it("puts the malloc settings in place when node has every flag, and keeps the operator's own", async () => {
    const ran = await run([...COMMAND_LINE_FLAGS], { MALLOC_ARENA_MAX: '4' })
    expect(ran.pid).toBe(ran.spawnedPid)
    if (hasExecve) expect(ran.malloc).toEqual({ ...MALLOC_ENVIRONMENT, MALLOC_ARENA_MAX: '4' })
    else expect(ran.malloc).toEqual({ MALLOC_ARENA_MAX: '4' })
    // Given everything, it runs as started: the flags once, in the operator's order.
    const given = await run([...COMMAND_LINE_FLAGS], MALLOC_ENVIRONMENT)
    expect(given.execArgv.filter((arg) => COMMAND_LINE_FLAGS.includes(arg))).toEqual([...COMMAND_LINE_FLAGS])
    expect(given.malloc).toEqual(MALLOC_ENVIRONMENT)
  })

  it('leaves a flag given in NODE_OPTIONS or on the command line as it is', async () => {
    const ran = await run(['--maglev'], { NODE_OPTIONS: '--max-semi-space-size=32' })
    expect(ran.pid).toBe(ran.spawnedPid)
    expect(ran.execArgv).not.toContain('--max-semi-space-size=16')
    expect(ran.execArgv).not.toContain('--no-maglev')
    expect(ran.execArgv).toContain('--maglev')
  })

  it('leaves a process with an IPC channel as it is, so the channel keeps working', async () => {
    const child = fork(FIXTURE, ['ipc'], {
      cwd: path.join(__dirname, '..'),
      execArgv: ['--import', 'tsx'],
      env: { ...withoutMalloc(process.env), NODE_OPTIONS: '' },
      silent: true,
    })
    let stdout = ''
    child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')))
    const exited = new Promise((resolve) => child.once('exit', resolve))
    const message = await new Promise((resolve) => child.once('message', resolve))
    await exited
    expect(message).toBe('relaunched fixture')
    const ran = JSON.parse(stdout)
    expect(ran.pid).toBe(child.pid)
    for (const flag of COMMAND_LINE_FLAGS) expect(ran.execArgv).not.toContain(flag)
    expect(ran.malloc).toEqual({})
  })
})

/** The test runner's environment, less any MALLOC_ setting (a CI could set its own). */
function withoutMalloc(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([name]) => !name.startsWith('MALLOC_')))
}
