import { missingMallocSettings } from './malloc-env.ts'
import { missingCommandLineFlags } from './v8-flags.ts'

/**
 * Imported first by every service's main.ts, so it runs before the rest of the bundle is
 * loaded: when node was started without COMMAND_LINE_FLAGS (`./v8-flags.ts`) or without the
 * MALLOC_ENVIRONMENT settings (`./malloc-env.ts`), it replaces itself with
 * `node <the missing flags> <its own flags> <script> <arguments>`, the missing settings added to
 * its environment, through `process.execve`: the same pid, the rest of the environment and open
 * stdio, so a container's PID 1, a supervisor or a test that holds the pid sees one process
 * throughout. It costs one more start of node itself, before the
 * bundle loads (tens of milliseconds of `ready`).
 *
 * Node 20 has no `process.execve` and needs neither flag (its defaults are what the flags set);
 * on a Node 22 older than 22.15 the service runs with V8's defaults. A service started with
 * `node --max-semi-space-size=64 …` or NODE_OPTIONS naming the flag keeps what it was given, and
 * so does one started with its own MALLOC_ARENA_MAX (or either threshold).
 *
 * If the exec itself fails, the service goes on with what it has; its `listening` log line
 * names the flags node runs with. Not for the CLI or tests: only a long-running service gains.
 */
type Execve = (file: string, args: readonly string[], env: NodeJS.ProcessEnv) => never
const execve = (process as { execve?: Execve }).execve

const missing = missingCommandLineFlags(process.execArgv, process.env.NODE_OPTIONS)
const malloc = missingMallocSettings(process.env)
// A process with an IPC channel (started by fork(), cluster, pm2) is left as it is: the channel
// does not survive the exec.
if (
  (missing.length > 0 || Object.keys(malloc).length > 0) &&
  typeof execve === 'function' &&
  process.channel === undefined
) {
  const [, script, ...args] = process.argv
  if (script !== undefined) {
    try {
      execve.call(
        process,
        process.execPath,
        [process.execPath, ...missing, ...process.execArgv, script, ...args],
        { ...process.env, ...malloc },
      )
    } catch {
      // Runs on V8's and glibc's defaults: more memory, nothing else changes.
    }
  }
}
