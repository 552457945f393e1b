import type { AddressInfo } from 'node:net'
import { SMTPServer } from 'smtp-server'

export interface ReceivedMail {
  to: string[]
  /** The message as it arrived (headers and body), quoted-printable decoded. */
  text: string
  subject: string
}

/** quoted-printable (RFC 2045 §6.7), as nodemailer writes bodies with long lines: soft breaks and =XX. */
function decodeQuotedPrintable(s: string): string {
  const bytes = s
    .replace(/=\r?\n/g, '')
    .replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)))
  return Buffer.from(bytes, 'latin1').toString('utf8')
}

/**
 * A real SMTP server in this process (the `smtp-server` package): what dns-manager's nodemailer
 * transport sends arrives here, and a test reads it. Plain SMTP on loopback, no STARTTLS, no AUTH.
 */
export async function startSmtpServer() {
  const mails: ReceivedMail[] = []
  const waiters: Array<() => void> = []
  const server = new SMTPServer({
    disabledCommands: ['STARTTLS', 'AUTH'],
    authOptional: true,
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = []
      stream.on('data', (c: Buffer) => chunks.push(c))
      stream.on('end', () => {
        const text = decodeQuotedPrintable(Buffer.concat(chunks).toString('latin1'))
        const subject = /^Subject: (.*)$/m.exec(text)?.[1]?.trim() ?? ''
        mails.push({ to: session.envelope.rcptTo.map((r) => r.address), text, subject })
        waiters.splice(0).forEach((w) => w())
        callback()
      })
    },
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.server.address() as AddressInfo).port
  return {
    url: `smtp://127.0.0.1:${port}`,
    mails,
    /** The next mail to `to` (already here or arriving within `timeoutMs`). */
    async mailTo(to: string, timeoutMs = 10_000): Promise<ReceivedMail> {
      const deadline = Date.now() + timeoutMs
      for (;;) {
        const found = mails.find((m) => m.to.includes(to.toLowerCase()))
        if (found) {
          mails.splice(mails.indexOf(found), 1)
          return found
        }
        if (Date.now() > deadline) throw new Error(`no mail to ${to} within ${timeoutMs} ms`)
        await new Promise<void>((resolve) => {
          waiters.push(resolve)
          setTimeout(resolve, 100)
        })
      }
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

export type SmtpServer = Awaited<ReturnType<typeof startSmtpServer>>

/** The first link in a mail that starts with `prefix`. */
export function linkIn(mail: ReceivedMail, prefix: string): string {
  const escaped = prefix.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
  const m = new RegExp(`${escaped}[^\\s]+`).exec(mail.text)
  if (!m) throw new Error(`no link ${prefix}… in:\n${mail.text}`)
  return m[0]
}
