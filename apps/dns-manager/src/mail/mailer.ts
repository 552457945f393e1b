import type { Logger } from '@quartet/core/log'
import type * as Nodemailer from 'nodemailer'
import type { Mailer } from '../domain/ports.ts'

/** How long one mail may take (connect, greet, send) before it counts as an outage. */
const SMTP_TIMEOUT_MS = 10_000

/**
 * The Mailer port: nodemailer's SMTP transport to SMTP_URL, or, without one, the log (the
 * message, link included, is written at info level so a developer can follow it; main says so
 * at start).
 */
export function createMailer(options: {
  smtpUrl?: string | undefined
  from: string
  logger: Logger
  /** Milliseconds each of connect, greeting and socket inactivity may take (default 10 s). */
  timeoutMs?: number
}): Mailer {
  const { smtpUrl, from, logger, timeoutMs = SMTP_TIMEOUT_MS } = options
  if (!smtpUrl)
    return {
      async send(message) {
        logger.info({ mail: { from, ...message } }, 'mail not sent (no SMTP_URL): written here instead')
      },
    }
  // Loaded only when mail is configured: a service without SMTP_URL never evaluates nodemailer.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const nodemailer = require('nodemailer') as typeof Nodemailer
  // The timeouts belong to the transport: createTransport's second argument is mail defaults
  // (nodemailer 10's types say so; given there, they were never applied to the connection).
  const transport = nodemailer.createTransport({
    url: smtpUrl,
    connectionTimeout: timeoutMs,
    greetingTimeout: timeoutMs,
    socketTimeout: timeoutMs,
  })
  return {
    async send(message) {
      await transport.sendMail({ from, to: message.to, subject: message.subject, text: message.text })
    },
  }
}
