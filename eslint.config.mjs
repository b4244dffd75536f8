// @ts-check
import eslint from '@eslint/js';
import prettier from 'eslint-config-prettier';
import { defineConfig, globalIgnores } from 'eslint/config';
import globals from 'globals';
import tseslint from 'typescript-eslint';

/**
 * ESLint for libs/, src/, test/, bench/ and scripts/ (`npm run lint`, which also
 * runs `prettier --check`). Formatting is Prettier's alone: eslint-config-prettier
 * turns off every rule that would disagree with it.
 */
export default defineConfig(
  globalIgnores(['dist/', 'coverage/', '.cache/', '.test-services/', 'node_modules/', 'bench/results/', 'models/']),
  eslint.configs.recommended,
  tseslint.configs.recommended,
  prettier,
  {
    languageOptions: {
      ecmaVersion: 2023,
      sourceType: 'module',
      globals: globals.node,
    },
    linterOptions: {
      // A disable comment that no longer silences anything is noise: report it.
      reportUnusedDisableDirectives: 'error',
    },
    rules: {
      // `_`-prefixed parameters and rest siblings are intentionally unused.
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true },
      ],
    },
  },
  {
    // Jest's globals only where jest runs (scripts/compat defines its own on node:test).
    files: ['test/**', '**/*.spec.ts', 'libs/serialized/src/testing/**'],
    languageOptions: { globals: globals.jest },
  },
  {
    // Plain Node scripts and configs (CommonJS).
    files: ['**/*.js', '**/*.cjs'],
    languageOptions: { sourceType: 'commonjs' },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
