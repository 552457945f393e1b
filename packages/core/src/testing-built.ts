import { existsSync, readdirSync, statSync } from 'node:fs'
import path from 'node:path'

const CORE_SRC = __dirname

/** The newest modification time under `dir` (files only), with the file's path. */
function newest(dir: string): { file: string; mtimeMs: number } {
  let best = { file: dir, mtimeMs: 0 }
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue
    const file = path.join(entry.parentPath, entry.name)
    const { mtimeMs } = statSync(file)
    if (mtimeMs > best.mtimeMs) best = { file, mtimeMs }
  }
  return best
}

/**
 * The path of an app's built entry (`dist/<name>.js`, what operators run: `node dist/cli.js`),
 * for tests that run it as a child process. A bundle starts in a fraction of the time `tsx` takes
 * to compile the sources on every run. Throws, naming the build command, when the bundle is
 * missing or older than a source it is built from (the app's `src/` or core's), so a test never
 * passes or fails on yesterday's code. `pnpm test` builds before it tests.
 */
export function builtEntry(appDir: string, name: string): string {
  const entry = path.join(appDir, 'dist', `${name}.js`)
  const pkg = path.basename(appDir)
  const build = `pnpm turbo run build --filter=@quartet/${pkg}`
  if (!existsSync(entry)) throw new Error(`${entry} is not built: run \`${build}\` first`)
  const built = statSync(entry).mtimeMs
  for (const dir of [path.join(appDir, 'src'), CORE_SRC]) {
    const source = newest(dir)
    if (source.mtimeMs > built)
      throw new Error(`${entry} is older than ${source.file}: run \`${build}\` first`)
  }
  return entry
}
