import { spawnSync } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import fs from 'node:fs/promises'
import { createServer, get, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { sendsDirectly } from '../../src/domain/storage.ts'
import { FileRangeStream } from '../../src/drivers/file-range-stream.ts'

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex')
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe('FileRangeStream', () => {
  let dir: string
  let file: string
  // 5.5 MiB: more chunks than the two buffers sendTo reuses.
  const bytes = randomBytes(5.5 * 1024 * 1024)
  let server: Server | undefined
  beforeAll(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'file-range-'))
    file = path.join(dir, 'f.bin')
    writeFileSync(file, bytes)
  })
  afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  /** An HTTP server whose one response is `send(res)`, and what a client got from it. */
  async function serve(
    send: (res: ServerResponse) => Promise<void>,
    client: { slow?: boolean; leaveAfter?: number } = {},
  ): Promise<{ received: Buffer; sent: Promise<void> }> {
    let sent!: Promise<void>
    server = createServer((_req, res) => {
      sent = send(res)
      sent.catch(() => {})
    })
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve))
    const { port } = server.address() as AddressInfo
    const received = await new Promise<Buffer>((resolve, reject) => {
      get({ port, host: '127.0.0.1', path: '/' }, (res) => {
        const chunks: Buffer[] = []
        let length = 0
        res.on('data', (chunk: Buffer) => {
          chunks.push(chunk)
          length += chunk.length
          if (client.leaveAfter !== undefined && length >= client.leaveAfter) {
            res.destroy()
            resolve(Buffer.concat(chunks))
          } else if (client.slow) {
            // A reader slower than the disk: writes stay in flight while the next chunk is read.
            res.pause()
            setTimeout(() => res.resume(), 2)
          }
        })
        res.on('end', () => resolve(Buffer.concat(chunks)))
      }).on('error', reject)
    })
    return { received, sent }
  }

  it('reads a range as a Readable, each chunk its own buffer', async () => {
    const stream = new FileRangeStream(await fs.open(file, 'r'), 100, 3 * 1024 * 1024 + 99)
    const chunks: Buffer[] = []
    for await (const chunk of stream) chunks.push(chunk as Buffer)
    expect(sha256(Buffer.concat(chunks))).toBe(sha256(bytes.subarray(100, 3 * 1024 * 1024 + 100)))
    expect(new Set(chunks.map((c) => c.buffer)).size).toBe(chunks.length)
  })

  it('sends the whole file to a slow connection through its two reused buffers, byte for byte', async () => {
    const handle = await fs.open(file, 'r')
    const stream = new FileRangeStream(handle, 0, bytes.length - 1)
    expect(sendsDirectly(stream)).toBe(true)
    let handed = 0
    const { received, sent } = await serve(
      async (res) => {
        res.setHeader('content-length', bytes.length)
        await stream.sendTo(res, (n) => (handed += n))
        res.end()
      },
      { slow: true },
    )
    await sent
    expect(received.length).toBe(bytes.length)
    expect(sha256(received)).toBe(sha256(bytes))
    expect(handed).toBe(bytes.length)
    expect(handle.fd).toBe(-1) // closed
  })

  it('sends a range that ends inside a chunk', async () => {
    const [start, end] = [1024 * 1024 - 7, 4 * 1024 * 1024 + 12]
    const stream = new FileRangeStream(await fs.open(file, 'r'), start, end)
    const { received } = await serve(async (res) => {
      await stream.sendTo(res, () => {})
      res.end()
    })
    expect(sha256(received)).toBe(sha256(bytes.subarray(start, end + 1)))
  })

  it('rejects, closes the file and hands no more once the client goes away mid-file', async () => {
    // Larger than what loopback's socket buffers can take in, so the client leaves mid-file.
    const size = 64 * 1024 * 1024
    const big = path.join(dir, 'big.bin')
    writeFileSync(big, Buffer.alloc(size, 1))
    const handle = await fs.open(big, 'r')
    const stream = new FileRangeStream(handle, 0, size - 1)
    let handed = 0
    const { received, sent } = await serve(
      async (res) => {
        res.setHeader('content-length', size)
        await stream.sendTo(res, (n) => (handed += n))
      },
      { leaveAfter: 1024 * 1024 },
    )
    await expect(sent).rejects.toThrow()
    expect(received.length).toBeLessThan(size)
    expect(handed).toBeLessThan(size)
    await sleep(10)
    expect(handle.fd).toBe(-1)
  })

  it('leaves no unhandled rejection when the client goes away while the disk is being read', () => {
    // In a process of its own: Jest replaces node's handling of unhandled rejections, which
    // ends the process.
    const run = spawnSync(
      process.execPath,
      ['--import', 'tsx', path.join(__dirname, '..', 'support', 'leave-during-read.ts'), dir],
      { encoding: 'utf8', timeout: 60_000 },
    )
    expect({ status: run.status, stdout: run.stdout }).toEqual({ status: 0, stdout: 'rejected' })
  })

  it('ends early, having handed only what exists, when the file is shorter than the range', async () => {
    const short = path.join(dir, 'short.bin')
    writeFileSync(short, bytes.subarray(0, 1500))
    const stream = new FileRangeStream(await fs.open(short, 'r'), 0, 1024 * 1024 * 2)
    let handed = 0
    const { received } = await serve(async (res) => {
      await stream.sendTo(res, (n) => (handed += n))
      res.end()
    })
    expect(received.length).toBe(1500)
    expect(handed).toBe(1500)
    const again = new FileRangeStream(await fs.open(short, 'r'), 1000, 1024 * 1024 * 2)
    const chunks: Buffer[] = []
    for await (const chunk of again) chunks.push(chunk as Buffer)
    expect(Buffer.concat(chunks)).toEqual(bytes.subarray(1000, 1500))
  })
})
