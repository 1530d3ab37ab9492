// ESLint flat config. Typed linting everywhere; a determinism fence for workflows/.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { builtinModules } from 'node:module';

const nodeBuiltins = [...builtinModules, ...builtinModules.map((m) => `node:${m}`)];

/** Modules that perform I/O or read the clock/environment: never imported (as values) by a workflow. */
const ioModules = [
  'pg', 'knex', 'dockerode', 'undici', 'koa', '@koa/router', 'pino', 'yaml',
  '@temporalio/activity', '@temporalio/client', '@temporalio/worker', '@temporalio/testing',
];

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.data/**', '.tools/**', 'eslint.config.mjs'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false } }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      'no-console': 'error',
    },
  },
  {
    // Workflows are replayed: no Node built-ins, no I/O modules, no project I/O code.
    files: ['workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        paths: [...nodeBuiltins, ...ioModules].map((name) => ({
          name, message: 'Workflows must be deterministic: do I/O in an activity.', allowTypeImports: true,
        })),
        patterns: [
          { group: ['**/lib/*', '**/gateway/**', '**/api/**', '**/workers/**'], message: 'Workflows may not import I/O code.', allowTypeImports: true },
          { group: ['**/activities', '**/activities/**'], message: 'Import activity types only (import type).', allowTypeImports: true },
        ],
      }],
      'no-restricted-globals': ['error',
        { name: 'process', message: 'Workflows may not read the process environment.' },
        { name: 'fetch', message: 'Workflows may not do I/O.' },
        { name: 'require', message: 'Workflows may not load modules dynamically.' },
      ],
    },
  },
  {
    // Shared code stays below the processes: lib/ (identity included) imports nothing above it.
    files: ['lib/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [{
          group: ['**/gateway/**', '**/api/**', '**/agent/**', '**/activities/**', '**/workers/**', '**/workflows/**'],
          message: 'lib/ is shared by every process: move what it needs into lib/ instead.',
        }],
      }],
    },
  },
  {
    // The control plane shares identity through lib/identity, never by importing the gateway.
    files: ['api/**/*.ts', 'agent/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [{ group: ['**/gateway/**'], message: 'Import shared code from lib/ (identity: lib/identity), not from gateway/.' }],
      }],
    },
  },
  {
    // Test files and dev scripts may print.
    files: ['test/**/*.ts', 'ops/**/*.ts', 'bench/**/*.ts'],
    rules: { 'no-console': 'off' },
  },
);
