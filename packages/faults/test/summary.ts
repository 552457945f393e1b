import { mkdirSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { LOG_DIR } from '../src/service-process.ts'

/** What each probe got in each run, next to the service logs (packages/faults/logs/). */
export function writeSummary(file: string, runs: Array<[string, string[]]>): void {
  mkdirSync(LOG_DIR, { recursive: true })
  const text = runs.map(([title, lines]) => `== ${title}\n${lines.join('\n')}`).join('\n\n')
  writeFileSync(path.join(LOG_DIR, `${file}-summary.txt`), `${text}\n`)
}
