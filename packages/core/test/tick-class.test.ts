import { execFile } from 'node:child_process'
import path from 'node:path'

const FIXTURE = path.join(__dirname, 'fixtures', 'tick-class.ts')

describe('keepTickObjectClass', () => {
  it('holds a tick object that shares its hidden class with the ticks queued after full collections', async () => {
    const ran = await new Promise<Record<string, unknown>>((resolve, reject) =>
      execFile(
        process.execPath,
        ['--allow-natives-syntax', '--expose-gc', '--import', 'tsx', FIXTURE],
        { cwd: path.join(__dirname, '..'), env: { ...process.env, NODE_OPTIONS: '' } },
        (err, stdout, stderr) =>
          err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(JSON.parse(stdout)),
      ),
    )
    // A tick object: node's callback and args, and its two ids under symbol keys.
    expect(ran.keys).toEqual(expect.arrayContaining(['callback', 'args']))
    expect(ran.symbols).toEqual(expect.arrayContaining(['async_id_symbol', 'trigger_async_id_symbol']))
    expect(ran).toMatchObject({ freshIsKept: false, sameMap: true, stillKept: true, otherShape: false })
  })
})
