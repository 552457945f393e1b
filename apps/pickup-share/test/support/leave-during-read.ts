// Run by test/unit/file-range-stream.test.ts in a process of its own (node's own unhandled-rejection
// handling, which Jest replaces): a client leaves while the disk read of the next chunk is under
// way. Exits 0 when sendTo rejected and nothing went unhandled, 3 on an unhandled rejection.
import { writeFileSync } from 'node:fs'
import fs from 'node:fs/promises'
import { createServer, get } from 'node:http'
import type { AddressInfo } from 'node:net'
import path from 'node:path'
import { FileRangeStream } from '../../src/drivers/file-range-stream.ts'

process.on('unhandledRejection', () => process.exit(3))
const file = path.join(process.argv[2]!, 'leave.bin')
writeFileSync(file, Buffer.alloc(64 * 1024 * 1024, 7))
const server = createServer((_req, res) => {
  void (async () => {
    const handle = await fs.open(file, 'r')
    const read = handle.read.bind(handle) as (...args: unknown[]) => Promise<unknown>
    // A slow disk: the write's failure arrives while the next read is still under way.
    ;(handle as unknown as { read: typeof read }).read = async (...args) => {
      await new Promise((resolve) => setTimeout(resolve, 30))
      return read(...args)
    }
    const outcome = await new FileRangeStream(handle, 0, 64 * 1024 * 1024 - 1)
      .sendTo(res, () => {})
      .then(
        () => 'resolved',
        () => 'rejected',
      )
    await new Promise((resolve) => setTimeout(resolve, 100))
    process.stdout.write(outcome)
    process.exit(outcome === 'rejected' ? 0 : 4)
  })()
})
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo
  get({ port, host: '127.0.0.1' }, (res) => {
    let received = 0
    res.on('data', (chunk: Buffer) => {
      received += chunk.length
      if (received > 2 * 1024 * 1024) res.destroy()
    })
  })
})
