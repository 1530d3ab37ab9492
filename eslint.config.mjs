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

/**
 * One `no-restricted-imports` block per layer: `forbid` names top-level folders it may not import
 * (type-only imports included); with `workflowNames`, workflows/ is reachable only through its
 * definitions modules (a workflow implementation may still be named by `import type`, to start it
 * type-checked).
 */
function layers(spec) {
  return Object.entries(spec).flatMap(([files, { forbid, workflowNames, why }]) => {
    const [folder, leaf] = files.split('/**/');
    // One block per folder depth, so `../` counts are read from the file's own place: from
    // gateway/admin/x.ts, `../ops/…` is gateway/ops (allowed) and `../../ops/…` the top-level ops/.
    return [1, 2, 3, 4, 5, 6].map((depth) => {
      const toRoot = `^(\\.\\./){${depth}}(\\.\\./)*`;
      const patterns = [{ regex: `${toRoot}(${forbid.join('|')})(/|$)`, message: `Layering: ${why} (docs/architecture.md).` }];
      if (workflowNames) {
        patterns.push({
          regex: `${toRoot}workflows(/(?!definitions(/|$)).*)?$`,
          message: 'Layering: take workflow names from workflows/definitions/*; a workflow implementation only as `import type` (docs/architecture.md).',
          allowTypeImports: true,
        });
      }
      const glob = [folder, ...Array(depth - 1).fill('*'), leaf].join('/');
      return { files: [glob], rules: { 'no-restricted-imports': ['error', { patterns }] } };
    });
  });
}

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
          { group: ['**/lib/*', '**/gateway/**', '**/api/**', '**/agent/**', '**/workers/**'], message: 'Workflows may not import I/O code.', allowTypeImports: true },
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
  // Layering (docs/architecture.md): each folder imports only along the allowed arrows. One
  // no-restricted-imports block per folder (a later block for the same files would replace it).
  ...layers({
    'lib/**/*.ts': { forbid: ['gateway', 'agent', 'api', 'activities', 'workflows', 'workers', 'ops', 'migrations', 'bench', 'test'], why: 'lib/ is shared by every process and imports nothing above it: move what it needs into lib/' },
    'migrations/**/*.ts': { forbid: ['gateway', 'agent', 'api', 'activities', 'workflows', 'workers', 'ops', 'bench', 'test'], why: 'migrations/ depends on lib/ only' },
    'gateway/**/*.ts': { forbid: ['agent', 'api', 'activities', 'workflows', 'workers', 'ops', 'migrations', 'bench', 'test'], why: 'the gateway depends on lib/ only (shared identity: lib/identity; contracts: lib/contracts)' },
    'agent/**/*.ts': { forbid: ['gateway', 'api', 'activities', 'workers', 'ops', 'bench', 'test'], workflowNames: true, why: 'the agent domain depends on lib/ and workflow definitions only' },
    'api/**/*.ts': { forbid: ['gateway', 'activities', 'workers', 'ops', 'bench', 'test'], workflowNames: true, why: 'api/ is HTTP over the agent domain: import agent/, lib/ and workflow definitions' },
    'console/**/*.{ts,tsx}': { forbid: ['lib', 'gateway', 'agent', 'api', 'activities', 'workflows', 'workers', 'ops', 'migrations', 'bench', 'test'], why: 'the browser console talks to the server over HTTP only: it imports nothing from the server folders' },
    'activities/**/*.ts': { forbid: ['gateway', 'api', 'workers', 'ops', 'bench', 'test'], workflowNames: true, why: 'activities are adapters over the agent domain: import agent/, lib/ and workflow definitions' },
  }),
  {
    // The API's composition root builds the forge adapters (activities/forge/) it mints repository
    // credentials with; the rest of api/ sees them only through agent/source/ (docs/architecture.md).
    files: ['api/main.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [
        { regex: '^(\\.\\./)+(gateway|workers|ops|bench|test)(/|$)', message: 'Layering: api/main.ts composes the API from agent/, lib/ and the forge adapters only (docs/architecture.md).' },
        { regex: '^(\\.\\./)+activities(/(?!forge/).*)?$', message: 'Layering: of activities/, api/main.ts may import the forge adapters only (docs/architecture.md).' },
        { regex: '^(\\.\\./)+workflows(/(?!definitions(/|$)).*)?$', message: 'Layering: take workflow names from workflows/definitions/* (docs/architecture.md).', allowTypeImports: true },
      ] }],
    },
  },
  {
    // Test files and dev scripts may print.
    files: ['test/**/*.ts', 'ops/**/*.ts', 'bench/**/*.ts'],
    rules: { 'no-console': 'off' },
  },
);
