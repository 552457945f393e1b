export function short(s: string | undefined, n = 60): string {
  if (s === undefined) return 'undefined'
  const shown = JSON.stringify(s).slice(1, -1)
  return shown.length > n ? `${shown.slice(0, n)}…(${s.length})` : shown
}
