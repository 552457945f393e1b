import path from 'node:path'

/**
 * The bundled content folder, from src/ (tsx, jest) or dist/ (esbuild bundle): both sit one
 * level below the app, next to content/. The Docker image ships the app folder, content included.
 */
export function bundledContentDir(dirname: string): string {
  return path.resolve(dirname, '..', 'content')
}

export function schemasDir(contentDir: string): string {
  return path.join(contentDir, 'schemas')
}
