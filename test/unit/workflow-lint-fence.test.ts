/**
 * The lint fence keeps workflows deterministic: the project's real ESLint config rejects Node
 * built-ins, I/O modules, value imports of activities and process access inside workflows/,
 * and floating promises everywhere.
 */
import assert from 'node:assert/strict';
import { ESLint } from 'eslint';

const eslint = new ESLint({ cwd: process.cwd() });

async function ruleIds(code: string, filePath: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath });
  return (result?.messages ?? []).map((m) => m.ruleId ?? m.message);
}

describe('workflow determinism lint fence', () => {
  const workflowFile = 'workflows/host-self-check.ts';

  it('rejects Node built-ins, I/O modules and value imports of activities in workflows/', async () => {
    for (const line of [
      "import { readFileSync } from 'node:fs';\nexport const x = readFileSync;",
      "import { randomUUID } from 'crypto';\nexport const x = randomUUID;",
      "import knex from 'knex';\nexport const x = knex;",
      "import { Context } from '@temporalio/activity';\nexport const x = Context;",
      "import { createHostActivities } from '../activities/host-activities';\nexport const x = createHostActivities;",
      "import { createDb } from '../lib/db';\nexport const x = createDb;",
    ]) {
      assert.ok((await ruleIds(line, workflowFile)).includes('no-restricted-imports'), line);
    }
    assert.ok((await ruleIds('export const x = process.env.X;', workflowFile)).includes('no-restricted-globals'));
  });

  it('allows type-only imports of activities in workflows/', async () => {
    const ids = await ruleIds("import type { HostActivities } from '../activities/host-activities';\nexport type X = HostActivities;", workflowFile);
    assert.deepEqual(ids, []);
  });

  it('allows Node built-ins outside workflows/ and rejects floating promises everywhere', async () => {
    assert.deepEqual(await ruleIds("import { readFileSync } from 'node:fs';\nexport const x = readFileSync;", 'lib/db.ts'), []);
    const ids = await ruleIds('async function f(): Promise<void> {}\nexport function g(): void { f(); }', 'lib/db.ts');
    assert.ok(ids.includes('@typescript-eslint/no-floating-promises'));
  });
});
