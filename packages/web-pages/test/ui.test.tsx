import type { VNode } from 'preact'
import { Alert, CopyButton, LanguageSelect, TableWrap } from '../src/ui.tsx'

// The parts as Preact builds them (what the browser will render); their behaviour in a page,
// axe included, is proven by the apps' test/browser suites.
type Props = Record<string, unknown> & { children?: unknown }
const propsOf = (node: unknown) => (node as VNode<Props>).props

describe('page parts', () => {
  it('when an alert is an error, then its role is alert; otherwise status', () => {
    const error = Alert({ kind: 'error', children: 'Broken', testId: 'e' })
    expect([error.type, propsOf(error).role, propsOf(error).class, propsOf(error)['data-testid']]).toEqual([
      'p',
      'alert',
      'alert error',
      'e',
    ])
    expect(propsOf(Alert({ kind: 'ok', children: 'Done' })).role).toBe('status')
    expect(propsOf(Alert({ kind: 'info', children: 'Note' })).role).toBe('status')
  })

  it('when a language is chosen, then onChange gets its id; each option says its own language', () => {
    const chosen: string[] = []
    const langs = [
      { id: 'en', label: 'English' },
      { id: 'zh-CN', label: '简体中文' },
    ] as const
    const node = LanguageSelect({ label: 'Language', value: 'en', langs, onChange: (l) => chosen.push(l) })
    expect(node.type).toBe('label')
    const [hidden, select] = propsOf(node).children as [VNode<Props>, VNode<Props>]
    expect([propsOf(hidden).class, propsOf(hidden).children]).toEqual(['visually-hidden', 'Language'])
    const options = propsOf(select).children as Array<VNode<Props>>
    expect(options.map((o) => [propsOf(o).value, propsOf(o).lang, propsOf(o).children])).toEqual([
      ['en', 'en', 'English'],
      ['zh-CN', 'zh-CN', '简体中文'],
    ])
    ;(propsOf(select).onChange as (e: unknown) => void)({ currentTarget: { value: 'zh-CN' } })
    expect(chosen).toEqual(['zh-CN'])
  })

  it('when a copy button is made, then it is a component of its own (hooks run only when rendered)', () => {
    const node = <CopyButton text="123" label="Copy" copied="Copied" failed="Failed" />
    expect(node.type).toBe(CopyButton)
    expect(propsOf(node).text).toBe('123')
  })

  it('when a table is wrapped, then it is a region the keyboard reaches, named by a label or by another element', () => {
    const byLabel = TableWrap({ label: 'Records', children: 'table' })
    expect([propsOf(byLabel).role, propsOf(byLabel).tabIndex, propsOf(byLabel)['aria-label']]).toEqual([
      'region',
      0,
      'Records',
    ])
    expect(propsOf(byLabel)['aria-labelledby']).toBeUndefined()
    const byHeading = TableWrap({ labelledBy: 'shares-title', children: 'table' })
    expect([propsOf(byHeading)['aria-labelledby'], propsOf(byHeading)['aria-label']]).toEqual([
      'shares-title',
      undefined,
    ])
  })
})
