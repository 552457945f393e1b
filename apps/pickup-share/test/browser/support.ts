import path from 'node:path'
import { describeWhen, missingNeeds } from '@quartet/core/testing'
import { CHROMIUM_NEED, ensureWebBuilt as ensureBuilt, screenshotDir } from '@quartet/web-pages/testing'

// The shared page-test setup (packages/web-pages), bound to this app.
export { axeSerious, CHROMIUM, CHROMIUM_ARGS } from '@quartet/web-pages/testing'
export const APP_DIR = path.resolve(__dirname, '..', '..')
export const SCREENSHOT_DIR = screenshotDir(APP_DIR)
export const ensureWebBuilt = () => ensureBuilt(APP_DIR)

const BROWSER_NEEDS = { programs: [CHROMIUM_NEED] }
/** Whether Chromium is here; a file's shared set-up (its top-level beforeAll) waits for it. */
export const haveChromium = missingNeeds(BROWSER_NEEDS).length === 0
/** `describe` for a suite in Chromium: fails under CI when it is missing, skips elsewhere. */
export const describeBrowser = (title: string, suite: () => void) => describeWhen(BROWSER_NEEDS, title, suite)

/** A small valid PDF with one line of text. */
export function tinyPdf(): Buffer {
  const stream = 'BT /F1 24 Tf 20 60 Td (Hello PDF) Tj ET'
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 300 144] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>',
    `<< /Length ${stream.length} >>\nstream\n${stream}\nendstream`,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
  ]
  let out = '%PDF-1.4\n'
  const offsets: number[] = []
  objects.forEach((o, i) => {
    offsets.push(out.length)
    out += `${i + 1} 0 obj\n${o}\nendobj\n`
  })
  const xref = out.length
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`
  out += offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('')
  out += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`
  return Buffer.from(out, 'latin1')
}
