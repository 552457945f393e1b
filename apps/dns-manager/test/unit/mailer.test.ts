import { silentLogger, startSilentServer } from '@quartet/core/testing'
import { createMailer } from '../../src/mail/mailer.ts'

describe('the SMTP mailer', () => {
  it('when the SMTP server accepts the connection but never greets, then a send fails within its timeout instead of hanging', async () => {
    const silent = await startSilentServer()
    try {
      const mailer = createMailer({
        smtpUrl: `smtp://127.0.0.1:${silent.port}`,
        from: 'dns@example.test',
        logger: silentLogger(),
        timeoutMs: 300,
      })
      const started = performance.now()
      await expect(mailer.send({ to: 'a@example.test', subject: 's', text: 't' })).rejects.toMatchObject({
        code: 'ETIMEDOUT',
      })
      expect(performance.now() - started).toBeLessThan(5_000)
    } finally {
      await silent.close()
    }
  })
})
