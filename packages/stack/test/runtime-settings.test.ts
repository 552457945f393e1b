import { readFileSync } from 'node:fs'
import path from 'node:path'
import { SERVICE_ENVIRONMENT, SERVICE_NODE_FLAGS } from '../src/runtime-settings.ts'

const DOCKERFILE = path.join(__dirname, '..', '..', '..', 'infra', 'docker', 'Dockerfile')

/** The runtime stage's ENV and CMD, as the image runs a service. */
function imageSettings(): { env: Record<string, string>; command: string[] } {
  const text = readFileSync(DOCKERFILE, 'utf8').replace(/\\\n/g, ' ')
  const base = text.slice(text.indexOf('AS runtime-base'))
  const envLine = /^ENV (.*)$/m.exec(base)![1]!
  const env = Object.fromEntries([...envLine.matchAll(/([A-Za-z_]+)=(\S+)/g)].map((m) => [m[1]!, m[2]!]))
  const command = JSON.parse(/^CMD (\[.*\])$/m.exec(text)![1]!) as string[]
  return { env, command }
}

describe('runtime settings', () => {
  it('when the launcher starts a service, then node gets the flags and malloc settings the image gives it', () => {
    const { env, command } = imageSettings()
    const imageFlags = [...(env.NODE_OPTIONS ?? '').split(' '), ...command.slice(1, -1)].filter(Boolean)

    expect([...imageFlags].sort()).toEqual([...SERVICE_NODE_FLAGS].sort())
    expect(command[0]).toBe('node')
    expect(command.at(-1)).toBe('dist/main.js')
    for (const [name, value] of Object.entries(SERVICE_ENVIRONMENT)) expect(env[name]).toBe(value)
  })
})
