import { createHash } from 'node:crypto'
import { type Readable, Transform, type TransformCallback } from 'node:stream'
import { ZipFile } from 'yazl'
import { strongEtag } from './downloads.ts'
import { downloadName } from './filenames.ts'
import type { ShareRecord } from './ports.ts'

/**
 * The transfer key of a whole-share archive (download all). Share paths are `<random>/<name>`,
 * so a path without a slash never meets a file's transfers.
 */
export const ARCHIVE_TRANSFER_PATH = '*archive'

/** One file of the archive: its name in the share, its size, and how to open its bytes. */
export interface ZipMember {
  name: string
  size: number
  open: () => Promise<Readable>
}

export interface ShareZip {
  /** The archive's bytes; files are opened one at a time as the archive reaches them. */
  stream: Readable
  /** The exact length of `stream` (stored entries with known sizes: yazl computes it up front). */
  size: number
}

/**
 * A ZIP of the given files, streamed: entries are stored (no compression, so the length is known
 * before the first byte and becomes Content-Length; shared files are mostly compressed already),
 * read lazily one after another with backpressure (constant memory, no temporary copy), ZIP64
 * wherever an entry or the archive passes 4 GiB (yazl decides per entry and for the end record).
 * A file that fails to open or to read ends the archive stream with that error.
 */
export async function zipOfFiles(members: ZipMember[], mtime: Date): Promise<ShareZip> {
  const zip = new ZipFile()
  const names = entryNames(members.map((m) => m.name))
  const out = zip.outputStream as Readable
  const fail = (err: unknown) => out.destroy(err instanceof Error ? err : new Error(String(err)))
  zip.on('error', fail)
  members.forEach((m, i) => {
    zip.addReadStreamLazy(names[i]!, { size: m.size, compress: false, mtime, mode: 0o100644 }, (cb) => {
      m.open().then(
        (stream) => {
          stream.once('error', fail)
          cb(null, stream)
        },
        (err: unknown) => cb(err, undefined as unknown as NodeJS.ReadableStream),
      )
    })
  })
  const size = await new Promise<number>((resolve) => {
    // @types/yazl declares the callback without its argument.
    ;(zip.end as (o: object, cb: (size: number) => void) => void).call(zip, {}, resolve)
  })
  if (size < 0) throw new Error('the archive length could not be computed')
  return { stream: out, size }
}

/**
 * Names inside the archive: the shown download name (bidi marks removed), unique ignoring case
 * (two files "a.txt" become "a.txt" and "a (2).txt"), so that unpacking never overwrites one.
 */
export function entryNames(names: string[]): string[] {
  const taken = new Set<string>()
  return names.map((raw) => {
    const name = downloadName(raw)
    const dot = name.lastIndexOf('.')
    const [stem, ext] = dot > 0 ? [name.slice(0, dot), name.slice(dot)] : [name, '']
    let candidate = name
    for (let n = 2; taken.has(candidate.toLowerCase()); n++) candidate = `${stem} (${n})${ext}`
    taken.add(candidate.toLowerCase())
    return candidate
  })
}

/**
 * Bytes `start`..`end` (inclusive) of `source`: a resumed archive. The archive is built again
 * from its first byte and the part before `start` is read and dropped (its entries' CRCs, which
 * the central directory at the end repeats, come from their bytes); only what is sent counts.
 */
export function sliceOf(source: Readable, start: number, end: number): Readable {
  let position = 0
  const slice = new Transform({
    transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback) {
      const from = position
      position += chunk.length
      if (position <= start || from > end) return done()
      done(null, chunk.subarray(Math.max(0, start - from), Math.min(chunk.length, end + 1 - from)))
    },
  })
  source.once('error', (err) => slice.destroy(err))
  slice.once('close', () => source.destroy())
  return source.pipe(slice)
}

/** The strong ETag of a share's archive: its files (each named by its own strong ETag), in order. */
export function archiveEtag(share: ShareRecord): string {
  const h = createHash('sha256').update(`archive\n${share.id}\n${share.createdAt.toISOString()}`)
  for (const f of share.files) h.update(`\n${f.name}\n${strongEtag(f)}`)
  return `"${h.digest('base64url').slice(0, 27)}"`
}
