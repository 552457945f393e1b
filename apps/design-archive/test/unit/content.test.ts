import { readFileSync } from 'node:fs'
import path from 'node:path'
import {
  buildRelease,
  readContentFolder,
  type SourceDocuments,
  validateSources,
} from '../../src/domain/content.ts'
import { defaultReleaseVersion } from '../../src/domain/releases.ts'
import { contentDir, validator } from '../helpers.ts'

const load = <T>(name: string): T => JSON.parse(readFileSync(path.join(contentDir, name), 'utf8')) as T

// WCAG 2.2 relative luminance and contrast ratio.
const luminance = (hex: string) => {
  const [r, g, b] = [1, 3, 5].map((i) => {
    const c = parseInt(hex.slice(i, i + 2), 16) / 255
    return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4
  })
  return 0.2126 * r! + 0.7152 * g! + 0.0722 * b!
}
const contrast = (a: string, b: string) => {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x)
  return (hi! + 0.05) / (lo! + 0.05)
}

describe('the bundled content', () => {
  it('when validated, then every schema and cross-reference holds', () => {
    expect(validateSources(validator, readContentFolder(contentDir))).toEqual([])
  })

  it('when the terms are read, then there are at least 270, bilingual, with unique ids and no known mistranslation', () => {
    const { terms } = load<{ terms: Array<{ id: string; en: string; zh: string; pos: string }> }>(
      'terms.json',
    )
    expect(terms.length).toBeGreaterThanOrEqual(270)
    expect(new Set(terms.map((t) => t.id)).size).toBe(terms.length)
    expect(new Set(terms.map((t) => `${t.en}|${t.pos}`)).size).toBe(terms.length)
    for (const t of terms) {
      expect([t.id, /[\u4e00-\u9fff]/.test(t.zh)]).toEqual([t.id, true])
      expect([t.id, /[\u4e00-\u9fff]/.test(t.en)]).toEqual([t.id, false])
      // 登陆 (to land) is the classic misspelling of 登录 (to sign in).
      expect(t.zh).not.toContain('登陆')
    }
    const byId = new Map(terms.map((t) => [t.id, t.zh]))
    expect(byId.get('sign-in')).toBe('登录')
    expect(byId.get('sign-out')).toBe('退出登录')
    expect(byId.get('sign-up')).toBe('注册')
    expect(byId.get('cancel')).toBe('取消')
  })

  it('when the style palettes are measured, then text, muted text and button labels reach 4.5:1', () => {
    const { styles } = load<{ styles: Array<{ id: string; palette: { example: Record<string, string> } }> }>(
      'styles.json',
    )
    for (const { id, palette } of styles) {
      const p = palette.example
      for (const [fg, bg] of [
        ['text', 'background'],
        ['muted_text', 'background'],
        ['muted_text', 'surface'],
        ['on_primary', 'primary'],
      ] as const) {
        const ratio = contrast(p[fg]!, p[bg]!)
        expect([id, fg, bg, ratio >= 4.5]).toEqual([id, fg, bg, true])
      }
    }
  })

  it('when the quality gates are read, then the standard thresholds are exact', () => {
    const { gates } = load<{
      gates: Array<{ id: string; threshold: { operator?: string; value?: number; unit?: string } }>
    }>('quality-gates.json')
    const threshold = (id: string) => gates.find((g) => g.id === id)?.threshold
    expect(threshold('text-contrast')).toMatchObject({ operator: '>=', value: 4.5 })
    expect(threshold('large-text-contrast')).toMatchObject({ operator: '>=', value: 3 })
    expect(threshold('non-text-contrast')).toMatchObject({ operator: '>=', value: 3 })
    expect(threshold('target-size')).toMatchObject({ operator: '>=', value: 24, unit: 'CSS px' })
    expect(threshold('lcp')).toMatchObject({ operator: '<=', value: 2.5, unit: 's' })
    expect(threshold('inp')).toMatchObject({ operator: '<=', value: 200, unit: 'ms' })
    expect(threshold('cls')).toMatchObject({ operator: '<=', value: 0.1 })
    expect(threshold('focus-visible')).toMatchObject({ operator: 'true', value: true })
    expect(threshold('reduced-motion')).toMatchObject({ operator: 'true', value: true })
  })

  it('when the learning paths are read, then together they cite styles, blocks, gates and terms', () => {
    const { paths } = load<{ paths: Array<{ steps: Array<{ cites: Array<{ kind: string }> }> }> }>(
      'learning-paths.json',
    )
    const kinds = new Set(paths.flatMap((p) => p.steps.flatMap((s) => s.cites.map((c) => c.kind))))
    expect([...kinds].sort()).toEqual(['block', 'quality-gate', 'style', 'term'])
  })
})

describe('buildRelease', () => {
  const sources = readContentFolder(contentDir).sources as SourceDocuments
  const at = new Date('2026-11-22T18:00:00.000Z')

  it('when built, then the manifest is computed from the bytes of the other eight documents', () => {
    const release = buildRelease(validator, sources, '3.1.4', at)
    expect(release.documents.map((d) => d.name)[0]).toBe('manifest.json')
    const manifest = JSON.parse(release.documents[0]!.body.toString('utf8')) as {
      version: string
      published_at: string
      documents: Array<{ name: string; sha256: string; bytes: number; items: number }>
    }
    expect(manifest).toMatchObject({ version: '3.1.4', published_at: at.toISOString() })
    for (const entry of manifest.documents) {
      const doc = release.documents.find((d) => d.name === entry.name)!
      expect(entry).toMatchObject({ sha256: doc.sha256, bytes: doc.body.length, items: doc.items })
    }
    expect(manifest.documents.find((d) => d.name === 'terms.json')!.items).toBeGreaterThanOrEqual(270)
  })

  it('when built twice from the same sources, then the bytes are identical apart from what names the release', () => {
    const a = buildRelease(validator, sources, '1', at)
    const b = buildRelease(validator, sources, '1', at)
    expect(a.documents.map((d) => d.sha256)).toEqual(b.documents.map((d) => d.sha256))
    const c = buildRelease(validator, sources, '2', at)
    const changed = a.documents.filter((d, i) => d.sha256 !== c.documents[i]!.sha256).map((d) => d.name)
    expect(changed.sort()).toEqual(['catalog.json', 'manifest.json', 'skill-manifest.json'])
  })

  it('when no version is given, then the default is a sortable UTC timestamp', () => {
    expect(defaultReleaseVersion(new Date('2026-11-22T18:05:09.123Z'))).toBe('2026.11.22-180509')
  })
})
