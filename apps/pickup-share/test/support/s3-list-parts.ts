import { existsSync } from 'node:fs'
import fs from 'node:fs/promises'
import http from 'node:http'
import { once } from 'node:events'
import path from 'node:path'

/**
 * s3rver (the S3 server the bucket tests run) lacks two calls of the S3 multipart API that real
 * S3, MinIO and R2 have and @tus/s3-store needs to resume: ListParts (GET ?uploadId) and
 * AbortMultipartUpload (DELETE ?uploadId). This front answers those two from the parts s3rver
 * keeps on disk (`<bucket>/._S3rver_uploads/<uploadId>/<n>` + `<n>.md5`) and forwards every
 * other request to s3rver unchanged (signatures included: the Host header is passed through).
 */
export async function s3rverWithListParts(s3rverPort: number, directory: string) {
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://s3')
    const uploadId = url.searchParams.get('uploadId')
    if (
      uploadId !== null &&
      (req.method === 'GET' || req.method === 'DELETE') &&
      !url.searchParams.has('partNumber')
    ) {
      void answer(req.method, url, uploadId, res).catch((err: unknown) => {
        res.writeHead(500).end(String(err))
      })
      return
    }
    const upstream = http.request(
      { host: '127.0.0.1', port: s3rverPort, method: req.method, path: req.url, headers: req.headers },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers)
        up.pipe(res)
      },
    )
    upstream.on('error', () => res.destroy())
    req.pipe(upstream)
  })

  async function answer(method: string, url: URL, uploadId: string, res: http.ServerResponse) {
    const [, bucket = '', ...keyParts] = url.pathname.split('/')
    const key = decodeURIComponent(keyParts.join('/'))
    const dir = path.join(directory, bucket, '._S3rver_uploads', uploadId)
    if (!/^[A-Za-z0-9_-]+$/.test(uploadId) || !existsSync(dir)) {
      res
        .writeHead(404, { 'content-type': 'application/xml' })
        .end(
          `<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchUpload</Code><Message>The specified upload does not exist.</Message><UploadId>${uploadId}</UploadId></Error>`,
        )
      return
    }
    if (method === 'DELETE') {
      await fs.rm(dir, { recursive: true, force: true })
      res.writeHead(204).end()
      return
    }
    const numbers = (await fs.readdir(dir))
      .filter((n) => /^\d+$/.test(n))
      .map(Number)
      .sort((x, y) => x - y)
    const parts = await Promise.all(
      numbers.map(async (n) => {
        const [stat, md5] = await Promise.all([
          fs.stat(path.join(dir, String(n))),
          fs.readFile(path.join(dir, `${n}.md5`), 'utf8').catch(() => ''),
        ])
        return `<Part><PartNumber>${n}</PartNumber><LastModified>${stat.mtime.toISOString()}</LastModified><ETag>"${md5}"</ETag><Size>${stat.size}</Size></Part>`
      }),
    )
    const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;')
    res
      .writeHead(200, { 'content-type': 'application/xml' })
      .end(
        `<?xml version="1.0" encoding="UTF-8"?><ListPartsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Bucket>${esc(bucket)}</Bucket><Key>${esc(key)}</Key><UploadId>${uploadId}</UploadId><MaxParts>10000</MaxParts><IsTruncated>false</IsTruncated>${parts.join('')}</ListPartsResult>`,
      )
  }

  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as { port: number }
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}
