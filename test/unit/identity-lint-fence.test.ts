/**
 * The identity fence in the project's real ESLint config: lib/ (lib/identity included) imports
 * nothing from the processes above it, and the control plane (api/, agent/) never borrows from
 * gateway/: identity comes from lib/identity.
 */
import assert from 'node:assert/strict';
import { ESLint } from 'eslint';

const eslint = new ESLint({ cwd: process.cwd() });

async function ruleIds(code: string, filePath: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath });
  return (result?.messages ?? []).map((m) => m.ruleId ?? m.message);
}

describe('identity lint fence', () => {
  it('rejects imports of gateway/ from api/ and agent/, type-only ones too', async () => {
    for (const [code, file] of [
      ["import { isAdminToken } from '../../gateway/admin/guard';\nexport const x = isAdminToken;", 'api/auth/principals.ts'],
      ["import type { ApiKeyCache } from '../gateway/identity/api-keys';\nexport type X = ApiKeyCache;", 'api/app.ts'],
      ["import { grantState } from '../../gateway/agent-grants/grant-cache';\nexport const x = grantState;", 'agent/grants/gateway-grant-client.ts'],
    ] as const) {
      assert.ok((await ruleIds(code, file)).includes('no-restricted-imports'), `${file}: ${code}`);
    }
  });

  it('rejects imports from the processes in lib/', async () => {
    for (const code of [
      "import { ApiKeyCache } from '../../gateway/identity/api-keys';\nexport const x = ApiKeyCache;",
      "import type { AgentState } from '../../api/auth/principals';\nexport type X = AgentState;",
      "import { authenticateHost } from '../../agent/hosts/host-registry';\nexport const x = authenticateHost;",
    ]) {
      assert.ok((await ruleIds(code, 'lib/identity/api-keys.ts')).includes('no-restricted-imports'), code);
    }
  });

  it('allows lib/identity from api/ and the gateway', async () => {
    const code = "import { isAdminToken } from '../../lib/identity/admin-token';\nexport const x = isAdminToken;";
    assert.deepEqual(await ruleIds(code, 'api/auth/principals.ts'), []);
    assert.deepEqual(await ruleIds(code, 'gateway/admin/guard.ts'), []);
  });
});
