import { createHash, randomBytes } from 'node:crypto'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { loadAppConfig } from '../../src/config.ts'
import { ownerAndRepo } from '../../src/drivers/factory.ts'
import { parseSettings, ZRepoSettings } from '../../src/drivers/instance-settings.ts'
import { BlobVerifier } from '../../src/drivers/repo-read.ts'

const base = { DATABASE_URL: 'postgresql://postgres@127.0.0.1:5432/postgres' }
const gitBlobSha = (b: Buffer) => createHash('sha1').update(`blob ${b.length}\0`).update(b).digest('hex')

async function through(data: Buffer, sha: string, size: number): Promise<Buffer> {
  const out: Buffer[] = []
  const verifier = new BlobVerifier(sha, size)
  verifier.on('data', (c: Buffer) => out.push(c))
  await pipeline(Readable.from([data]), verifier)
  return Buffer.concat(out)
}

describe('repo store pieces', () => {
  it('when mirror bytes match the committed blob, then they pass; changed, short or long bytes fail the stream', async () => {
    const data = randomBytes(4096)
    const sha = gitBlobSha(data)
    expect((await through(data, sha, data.length)).equals(data)).toBe(true)
    const changed = Buffer.from(data)
    changed[10] = changed[10]! ^ 1
    await expect(through(changed, sha, data.length)).rejects.toThrow(/do not match/)
    await expect(through(data.subarray(1), sha, data.length)).rejects.toThrow(/do not match/)
    await expect(through(Buffer.concat([data, Buffer.from('x')]), sha, data.length)).rejects.toThrow(
      /more bytes/,
    )
  })

  it('when a remote URL is given, then owner and repo come from its path', () => {
    expect(ownerAndRepo('https://github.com/acme/drop.git')).toEqual({ owner: 'acme', repo: 'drop' })
    expect(ownerAndRepo('https://gitlab.com/group/sub/files')).toEqual({ owner: 'group/sub', repo: 'files' })
  })

  it('when repo settings carry credentials in the URL or a bad branch, then they are refused', () => {
    expect(() => parseSettings(ZRepoSettings, { remoteUrl: 'https://u:p@github.com/a/b.git' })).toThrow(
      /token/,
    )
    expect(() =>
      parseSettings(ZRepoSettings, { remoteUrl: 'https://github.com/a/b.git', branch: '../x' }),
    ).toThrow('branch: not a valid branch name')
    expect(() => parseSettings(ZRepoSettings, { remoteUrl: 'ssh://github.com/a/b.git' })).toThrow(
      'remoteUrl: must be an http:// or https:// URL',
    )
    expect(parseSettings(ZRepoSettings, { remoteUrl: 'https://github.com/a/b.git' })).toMatchObject({
      branch: 'main',
      username: 'x-access-token',
    })
  })

  it('when repo variables are unset, then the documented defaults apply; bad mirror templates stop start-up', () => {
    const c = loadAppConfig(base)
    expect(c).toMatchObject({
      REPO_BRANCH: 'main',
      REPO_USERNAME: 'x-access-token',
      REPO_MAX_FILE_BYTES: 104_857_600,
      REPO_CACHE_DIR: '.data/repos',
      REPO_MIRRORS: [],
      REPO_MIRROR_TTL_SECONDS: 600,
    })
    expect(c.REPO_REMOTE_URL).toBeUndefined()
    const mirrors = loadAppConfig({
      ...base,
      REPO_MIRRORS:
        'https://raw.githubusercontent.com/{owner}/{repo}/{sha}/{path}, https://cdn.jsdelivr.net/gh/{owner}/{repo}@{sha}/{path}',
    }).REPO_MIRRORS
    expect(mirrors).toHaveLength(2)
    expect(() => loadAppConfig({ ...base, REPO_MIRRORS: 'https://{owner}.example/{sha}/{path}' })).toThrow(
      /REPO_MIRRORS/,
    )
    expect(() => loadAppConfig({ ...base, REPO_MIRRORS: 'https://cdn.example/{owner}/{repo}' })).toThrow(
      /REPO_MIRRORS/,
    )
    expect(() => loadAppConfig({ ...base, REPO_REMOTE_URL: 'https://me:tok@github.com/a/b.git' })).toThrow(
      /REPO_REMOTE_URL/,
    )
  })
})
