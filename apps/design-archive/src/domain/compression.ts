import { promisify } from 'node:util'
import { brotliCompress, constants as zlibConstants, gzip } from 'node:zlib'

const brotli = promisify(brotliCompress)
const gzipAsync = promisify(gzip)

export interface CompressedBody {
  gzip: Buffer
  br: Buffer
}

/** The served encodings of one body, at the highest levels: made once per release, never per request. */
export async function compressBody(body: Buffer): Promise<CompressedBody> {
  const [gz, br] = await Promise.all([
    gzipAsync(body, { level: 9 }),
    brotli(body, {
      params: {
        [zlibConstants.BROTLI_PARAM_QUALITY]: zlibConstants.BROTLI_MAX_QUALITY,
        [zlibConstants.BROTLI_PARAM_MODE]: zlibConstants.BROTLI_MODE_TEXT,
        [zlibConstants.BROTLI_PARAM_SIZE_HINT]: body.length,
      },
    }),
  ])
  return { gzip: gz, br }
}
