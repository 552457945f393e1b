import { execFile, fork } from 'node:child_process'
import path from 'node:path'
import { COMMAND_LINE_FLAGS, missingCommandLineFlags } from '../src/v8-flags.ts'

/**
 * A service puts the V8 flags that count only on node's command line there itself, by
 * re-executing node (`process.execve`, Node ≥ 22.15) as the first thing its main.ts does, and
 * keeps a flag the operator gave.
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

describe('relaunch (a real child process)', () => {
  const FIXTURE = path.join(__dirname, 'fixtures', 'relaunched.ts')
  const hasExecve = typeof (process as { execve?: unknown }).execve === 'function'

  function run(
    nodeArgs: string[],
    env: NodeJS.ProcessEnv = {},
  ): Promise<{ spawnedPid: number; pid: number; execArgv: string[]; args: string[] }> {
    return new Promise((resolve, reject) => {
      const child = execFile(
        process.execPath,
        [...nodeArgs, '--import', 'tsx', FIXTURE, 'one', '--two', 'three four'],
        { cwd: path.join(__dirname, '..'), env: { ...process.env, NODE_OPTIONS: '', ...env } },
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
    if (hasExecve) expect(ran.execArgv.slice(0, COMMAND_LINE_FLAGS.length)).toEqual([...COMMAND_LINE_FLAGS])
    // Node 20 has no process.execve, and its V8 defaults are what the flags set.
    else for (const flag of COMMAND_LINE_FLAGS) expect(ran.execArgv).not.toContain(flag)
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
      env: { ...process.env, NODE_OPTIONS: '' },
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
  })
})
