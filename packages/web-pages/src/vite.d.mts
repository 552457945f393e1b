import type { Plugin, UserConfig } from 'vite'

export declare function pagesViteConfig(
  webDir: string,
  options?: { devApi?: Record<string, string> },
): UserConfig

export declare function precompress(): Plugin
