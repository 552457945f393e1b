// One flat config for the whole monorepo (ESLint 10 + typescript-eslint).
import js from '@eslint/js'
import tseslint from 'typescript-eslint'

export default tseslint.config(
  { ignores: ['**/dist/**', '**/generated/**', '**/node_modules/**', '**/coverage/**', '.data/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      ecmaVersion: 2023,
      sourceType: 'module',
      globals: {
        process: 'readonly',
        console: 'readonly',
        Buffer: 'readonly',
        __dirname: 'readonly',
        require: 'readonly',
        module: 'writable',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        setImmediate: 'readonly',
        fetch: 'readonly',
        URL: 'readonly',
        NodeJS: 'readonly',
      },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      'no-restricted-syntax': [
        'error',
        {
          selector: "MemberExpression[object.name='process'][property.name='env']",
          message:
            'Read configuration through the app config (config.ts); only config loading reads process.env.',
        },
      ],
    },
  },
  {
    // Where reading the environment is the point: config loading, the launcher, tests and tooling.
    files: [
      'packages/core/src/config.ts',
      // Re-executes node with the same environment, before any config is loaded.
      'packages/core/src/relaunch.ts',
      'packages/core/src/testing*.ts',
      'packages/web-pages/src/testing.ts',
      'packages/stack/**',
      'packages/faults/**',
      '**/test/**',
      'scripts/**',
      '**/*.cjs',
      '**/*.mjs',
    ],
    rules: { 'no-restricted-syntax': 'off', '@typescript-eslint/no-require-imports': 'off' },
  },
)
