import { spawn } from 'node:child_process'
import type { Readable } from 'node:stream'

export class GitError extends Error {
  constructor(
    message: string,
    readonly stderr: string,
    readonly exitCode: number | null,
  ) {
    super(message)
  }
}

export interface GitRunner {
  /** Runs git; resolves with stdout, rejects with GitError (stderr with secrets masked). */
  run(args: string[], options?: { input?: Readable | string; env?: Record<string, string> }): Promise<string>
  /** Starts git and hands its stdout over (for streaming a blob out). */
  stream(args: string[]): { stdout: Readable; done: Promise<void> }
}

/**
 * The git CLI with a fixed, minimal environment: no terminal prompts, no system or user config,
 * and the token passed as an `http.extraHeader` through GIT_CONFIG_* variables, so it appears
 * neither in a command line (ps) nor in a remote URL git could print. Anything git writes is
 * masked for the token before it can reach an error message or a log line.
 */
export function gitRunner(options: {
  gitDir: string
  username: string
  token?: string | undefined
}): GitRunner {
  const secrets: string[] = []
  const env: Record<string, string> = {
    // A fixed search path: the Debian `git` package (no user PATH leaks in).
    PATH: '/usr/local/bin:/usr/bin:/bin',
    HOME: options.gitDir,
    GIT_DIR: options.gitDir,
    GIT_TERMINAL_PROMPT: '0',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_AUTHOR_NAME: 'pickup-share',
    GIT_AUTHOR_EMAIL: 'pickup-share@localhost',
    GIT_COMMITTER_NAME: 'pickup-share',
    GIT_COMMITTER_EMAIL: 'pickup-share@localhost',
    LC_ALL: 'C',
  }
  if (options.token) {
    const basic = Buffer.from(`${options.username}:${options.token}`).toString('base64')
    secrets.push(options.token, basic)
    Object.assign(env, {
      GIT_CONFIG_COUNT: '1',
      GIT_CONFIG_KEY_0: 'http.extraHeader',
      GIT_CONFIG_VALUE_0: `Authorization: Basic ${basic}`,
    })
  }
  const mask = (text: string) => secrets.reduce((t, s) => t.split(s).join('***'), text)

  const start = (args: string[], extraEnv?: Record<string, string>) =>
    spawn('git', args, { env: { ...env, ...extraEnv }, stdio: ['pipe', 'pipe', 'pipe'] })

  return {
    run(args, runOptions = {}) {
      return new Promise((resolve, reject) => {
        const child = start(args, runOptions.env)
        const out: Buffer[] = []
        const err: Buffer[] = []
        let inputError: Error | null = null
        child.stdout.on('data', (b: Buffer) => out.push(b))
        child.stderr.on('data', (b: Buffer) => err.push(b))
        child.on('error', (e) => reject(new GitError(`git could not start: ${e.message}`, '', null)))
        child.stdin.on('error', () => {})
        child.on('close', (code) => {
          if (inputError) return reject(inputError)
          const stderr = mask(Buffer.concat(err).toString('utf8'))
          if (code === 0) resolve(Buffer.concat(out).toString('utf8'))
          else
            reject(
              new GitError(`git ${args[0]} failed (${code}): ${stderr.trim().slice(0, 500)}`, stderr, code),
            )
        })
        const input = runOptions.input
        if (input === undefined) child.stdin.end()
        else if (typeof input === 'string') child.stdin.end(input)
        else {
          input.on('error', (e) => {
            inputError = e
            child.kill('SIGKILL')
          })
          input.pipe(child.stdin)
        }
      })
    },
    stream(args) {
      const child = start(args)
      const err: Buffer[] = []
      child.stderr.on('data', (b: Buffer) => err.push(b))
      child.stdin.end()
      const done = new Promise<void>((resolve, reject) => {
        child.on('error', (e) => reject(new GitError(`git could not start: ${e.message}`, '', null)))
        child.on('close', (code) =>
          code === 0
            ? resolve()
            : reject(
                new GitError(`git ${args[0]} failed (${code})`, mask(Buffer.concat(err).toString()), code),
              ),
        )
      })
      return { stdout: child.stdout, done }
    },
  }
}
