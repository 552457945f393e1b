import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { request as httpRequest } from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { schemasDir } from '../src/content-location.ts'
import { ContentValidator } from '../src/domain/content.ts'
import { SOURCE_DOCUMENTS } from '../src/domain/documents.ts'

export const contentDir = path.join(__dirname, '..', 'content')
export const migrationsDir = path.join(__dirname, '..', 'prisma', 'migrations')
export const validator = new ContentValidator(schemasDir(contentDir))

const tempDirs: string[] = []
afterAll(() => {
  for (const dir of tempDirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

/** A private copy of the seven bundled source documents, to edit for one test. */
export function copyOfContent(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'design-content-'))
  tempDirs.push(dir)
  for (const name of SOURCE_DOCUMENTS) cpSync(path.join(contentDir, name), path.join(dir, name))
  return dir
}

/** Edits one JSON document of a content folder in place. */
export function editDocument(dir: string, name: string, edit: (doc: Record<string, unknown>) => void): void {
  const file = path.join(dir, name)
  const doc = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>
  edit(doc)
  writeFileSync(file, JSON.stringify(doc, null, 2))
}

export interface RawResponse {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: Buffer
}

/**
 * A request whose path goes on the wire byte for byte: supertest/fetch would normalise `..`,
 * backslashes and some escapes before the server saw them.
 */
export function rawRequest(
  baseUrl: string,
  method: string,
  rawPath: string,
  headers: Record<string, string> = {},
): Promise<RawResponse> {
  const url = new URL(baseUrl)
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        method,
        path: rawPath,
        headers: { connection: 'close', ...headers },
      },
      (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
        )
        res.on('error', reject)
      },
    )
    req.on('error', reject)
    req.end()
  })
}

/** Polls `check` until it returns true or `timeoutMs` passes. */
export async function eventually(check: () => Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (await check()) return
    await new Promise((r) => setTimeout(r, 50))
  }
  throw new Error(`condition not met within ${timeoutMs} ms`)
}
