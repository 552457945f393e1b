import { spawn } from 'node:child_process'
import { createServer } from 'node:http'
import { requestListener } from '@quartet/core/http'
import type { Express } from 'express'
import type { AddressInfo } from 'node:net'

/**
 * Runs a program without blocking the event loop (the app under test answers it from this
 * process), and collects its output. Killed after `timeoutMs`.
 */
export function run(
  cmd: string,
  args: string[],
  options: { timeoutMs?: number; env?: NodeJS.ProcessEnv } = {},
): Promise<{ status: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], env: options.env ?? process.env })
    let output = ''
    child.stdout.on('data', (d: Buffer) => (output += d.toString()))
    child.stderr.on('data', (d: Buffer) => (output += d.toString()))
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 60_000)
    timer.unref()
    child.on('close', (status) => {
      clearTimeout(timer)
      resolve({ status, output })
    })
  })
}

/**
 * Serves an app on a free loopback port, as `serve` serves it (hot routes first), for programs
 * outside this process to call.
 */
export async function listenOnLoopback(app: Express): Promise<{ port: number; close: () => Promise<void> }> {
  const server = createServer(requestListener(app)).listen(0, '127.0.0.1')
  await new Promise((r) => server.once('listening', r))
  return {
    port: (server.address() as AddressInfo).port,
    close: () => new Promise<void>((r) => server.close(() => r())),
  }
}
