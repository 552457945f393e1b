/**
 * A ZIP of decrypted files, written as they stream (no compression: entries are stored, as the
 * server's download-all stores them). The sizes are known before the first byte (the plaintext
 * size of every body), so the archive's exact length is too; each entry's CRC-32 follows it in a
 * data descriptor. Names are UTF-8 (flag 11) and made unique ignoring case. Plain ZIP (no ZIP64):
 * an archive over 4 GiB is refused before anything is fetched.
 */

const CRC_TABLE = (() => {
  const t = new Uint32Array(256)
  for (let n = 0; n < 256; n++) {
    let c = n
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
    t[n] = c >>> 0
  }
  return t
})()

function crc32(crc: number, bytes: Uint8Array): number {
  let c = ~crc >>> 0
  for (let i = 0; i < bytes.length; i++) c = CRC_TABLE[(c ^ bytes[i]!) & 0xff]! ^ (c >>> 8)
  return ~c >>> 0
}

export interface ZipEntry {
  name: string
  size: number
  /** The entry's bytes, opened when the archive reaches it. */
  open: () => Promise<ReadableStream<Uint8Array>>
}

const FLAGS = 0x0808 // data descriptor follows, names in UTF-8

/** Names made unique ignoring case (`a.txt`, `A (2).txt`), without folders or control characters. */
export function uniqueNames(names: string[]): string[] {
  const seen = new Set<string>()
  return names.map((raw) => {
    const safe = [...raw].map((c) =>
      c === '/' || c === '\\' || c.charCodeAt(0) < 0x20 || c === '\u007f' ? '_' : c,
    )
    const clean = safe.join('').replace(/^\.+$/, '_') || 'file'
    const dot = clean.lastIndexOf('.')
    const [stem, ext] = dot > 0 ? [clean.slice(0, dot), clean.slice(dot)] : [clean, '']
    let name = clean
    for (let n = 2; seen.has(name.toLowerCase()); n++) name = `${stem} (${n})${ext}`
    seen.add(name.toLowerCase())
    return name
  })
}

const utf8 = new TextEncoder()

/** The archive's exact length for these entries. */
export function zipSize(entries: Array<{ name: string; size: number }>): number {
  let total = 22
  for (const e of entries) {
    const n = utf8.encode(e.name).length
    total += 30 + n + e.size + 16 + 46 + n
  }
  return total
}

export const ZIP_MAX = 0xffffffff

/** The archive as a stream, entry after entry. */
export function zipStream(entries: ZipEntry[]): ReadableStream<Uint8Array> {
  if (zipSize(entries) > ZIP_MAX) throw new Error('archive over 4 GiB')
  const central: Uint8Array[] = []
  let offset = 0
  let index = 0
  let current: ReadableStreamDefaultReader<Uint8Array> | null = null
  let crc = 0
  let written = 0
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const entry = entries[index]
      if (!entry) {
        const dir = concatAll(central)
        const end = new Uint8Array(22)
        const v = new DataView(end.buffer)
        v.setUint32(0, 0x06054b50, true)
        v.setUint16(8, entries.length, true)
        v.setUint16(10, entries.length, true)
        v.setUint32(12, dir.length, true)
        v.setUint32(16, offset, true)
        controller.enqueue(dir)
        controller.enqueue(end)
        controller.close()
        return
      }
      const name = utf8.encode(entry.name)
      if (!current) {
        const local = new Uint8Array(30 + name.length)
        const v = new DataView(local.buffer)
        v.setUint32(0, 0x04034b50, true)
        v.setUint16(4, 20, true)
        v.setUint16(6, FLAGS, true)
        v.setUint16(26, name.length, true)
        local.set(name, 30)
        controller.enqueue(local)
        current = (await entry.open()).getReader()
        crc = 0
        written = 0
        return
      }
      const { value, done } = await current.read()
      if (!done) {
        crc = crc32(crc, value)
        written += value.length
        controller.enqueue(value)
        return
      }
      if (written !== entry.size) throw new Error(`${entry.name}: ${written} bytes, expected ${entry.size}`)
      const desc = new Uint8Array(16)
      const d = new DataView(desc.buffer)
      d.setUint32(0, 0x08074b50, true)
      d.setUint32(4, crc, true)
      d.setUint32(8, written, true)
      d.setUint32(12, written, true)
      controller.enqueue(desc)
      const c = new Uint8Array(46 + name.length)
      const cv = new DataView(c.buffer)
      cv.setUint32(0, 0x02014b50, true)
      cv.setUint16(4, 20, true)
      cv.setUint16(6, 20, true)
      cv.setUint16(8, FLAGS, true)
      cv.setUint32(16, crc, true)
      cv.setUint32(20, written, true)
      cv.setUint32(24, written, true)
      cv.setUint16(28, name.length, true)
      cv.setUint32(42, offset, true)
      c.set(name, 46)
      central.push(c)
      offset += 30 + name.length + written + 16
      current = null
      index++
    },
    cancel(reason) {
      void current?.cancel(reason)
    },
  })
}

function concatAll(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0))
  let at = 0
  for (const p of parts) {
    out.set(p, at)
    at += p.length
  }
  return out
}
