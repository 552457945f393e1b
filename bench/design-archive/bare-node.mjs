// The ceiling of Node's HTTP stack for this job, as a second baseline: node:http serving the
// documents from memory with an ETag and 304s, and nothing else (no request id, security headers,
// CORS, negotiation or metrics). Usage: node bare-node.mjs <port> <folder>
import { createHash } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { createServer } from 'node:http'
import path from 'node:path'

const [port, folder] = process.argv.slice(2)
const documents = new Map()
for (const name of readdirSync(folder)) {
  const body = readFileSync(path.join(folder, name))
  documents.set(`/design-api/v1/${name}`, {
    body,
    etag: `"${createHash('sha256').update(body).digest('hex')}"`,
  })
}
createServer((req, res) => {
  const doc = documents.get(req.url)
  if (!doc) {
    res.writeHead(404).end()
    return
  }
  if (req.headers['if-none-match'] === doc.etag) {
    res.writeHead(304, ['ETag', doc.etag]).end()
    return
  }
  res
    .writeHead(200, [
      'Content-Type',
      'application/json; charset=utf-8',
      'Content-Length',
      String(doc.body.length),
      'ETag',
      doc.etag,
    ])
    .end(doc.body)
}).listen(Number(port), '127.0.0.1')
