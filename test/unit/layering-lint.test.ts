/**
 * The layering rule in the project's real ESLint config (docs/architecture.md): each folder
 * imports only along the allowed arrows. For every layer, a forbidden import fails (type-only
 * too, except a workflow implementation named by `import type`) and an allowed one passes.
 */
import assert from 'node:assert/strict';
import { ESLint } from 'eslint';

const eslint = new ESLint({ cwd: process.cwd() });

async function restricted(code: string, filePath: string): Promise<boolean> {
  const [result] = await eslint.lintText(code, { filePath });
  // Other rules may speak too (the sample names a symbol the module lacks): only this one counts.
  return (result?.messages ?? []).some((m) => m.ruleId === 'no-restricted-imports');
}

const value = (from: string, name = 'x') => `import { ${name} } from '${from}';\nexport const y = ${name};`;
const typeOnly = (from: string) => `import type { X } from '${from}';\nexport type Y = X;`;

describe('layering lint rule', () => {
  const cases: Array<{ file: string; forbidden: string[]; allowed: string[] }> = [
    {
      file: 'lib/identity/api-keys.ts',
      forbidden: ['../../gateway/identity/api-keys', '../../api/auth/principals', '../../agent/hosts/host-registry', '../../activities/host-activities', '../../workflows/definitions/chat', '../../migrations/runner', '../../workers/control'],
      allowed: ['../db', '../crypto', './constant-time'],
    },
    {
      file: 'gateway/admin/guard.ts',
      forbidden: ['../../agent/jobs/job-store', '../../api/app', '../../activities/host-activities', '../../workflows/definitions/chat', '../../workers/host', '../../migrations/runner', '../../ops/admin/create-admin'],
      allowed: ['../../lib/identity/admin-token', '../../lib/contracts/grant-dispatch', '../agent-grants/grant-cache', '../ops/automation-score'],
    },
    {
      // gateway/ops/ is the gateway's own (metrics, alerts, the automation score): `../ops` from a
      // gateway folder is allowed, the top-level ops/ is not, at any depth.
      file: 'gateway/ops/automation-score/score.ts',
      forbidden: ['../../../ops/admin/create-admin', '../../../agent/jobs/job-store', '../../../../ops/admin/create-admin'],
      allowed: ['../../request-log/client-agent', '../../../lib/db', './signals'],
    },
    {
      file: 'agent/jobs/chat-delivery.ts',
      forbidden: ['../../gateway/identity/api-keys', '../../api/app', '../../activities/control/chat-activities', '../../workflows/chat', '../../workflows', '../../workers/control'],
      allowed: ['../../lib/db', '../../workflows/definitions/chat', '../events/event-store'],
    },
    {
      file: 'api/routes/jobs.ts',
      forbidden: ['../../gateway/admin/guard', '../../activities/docker/workspace-archive', '../../workflows/workspace-archive', '../../workers/host'],
      allowed: ['../../agent/jobs/job-store', '../../lib/http/route-access', '../../workflows/definitions/workspace-archive', '../auth/principals'],
    },
    {
      file: 'activities/control/chat-activities.ts',
      forbidden: ['../../api/routes/jobs', '../../gateway/app', '../../workflows/chat', '../../workers/control'],
      allowed: ['../../agent/jobs/turn-transitions', '../../lib/db', '../../workflows/definitions/failures', '../agent/types'],
    },
    {
      file: 'migrations/runner.ts',
      forbidden: ['../gateway/app', '../agent/jobs/job-store', '../api/app'],
      allowed: ['../lib/db', './index'],
    },
  ];

  for (const { file, forbidden, allowed } of cases) {
    it(`${file}: forbidden imports fail, type-only too; allowed ones pass`, async () => {
      for (const from of forbidden) {
        assert.ok(await restricted(value(from), file), `${file} importing ${from}`);
        if (!/\/workflows(\/(?!definitions)|$)/.test(from)) assert.ok(await restricted(typeOnly(from), file), `${file} importing type from ${from}`);
      }
      for (const from of allowed) assert.equal(await restricted(value(from), file), false, `${file} importing ${from}`);
    });
  }

  it('lets api/, agent/ and activities/ name a workflow implementation by `import type` only', async () => {
    for (const file of ['api/routes/workspace-archive.ts', 'agent/jobs/chat-delivery.ts', 'activities/control/chat-activities.ts']) {
      assert.equal(await restricted(typeOnly('../../workflows/chat'), file), false, file);
      assert.ok(await restricted(value('../../workflows/chat', 'chatWorkflow'), file), file);
    }
  });

  it('keeps the agent domain out of workflows/', async () => {
    assert.ok(await restricted(value('../agent/jobs/job-store'), 'workflows/chat.ts'));
    assert.equal(await restricted(value('./definitions/chat'), 'workflows/chat.ts'), false);
  });
});
