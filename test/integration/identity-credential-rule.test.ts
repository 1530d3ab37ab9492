/**
 * One credential validity rule, two paths (lib/identity): the control-plane API authenticates an
 * API key fresh from PostgreSQL, the gateway from its key cache filled by the same query. Every
 * case of the shared table (test/support/credential-cases.ts) is written as real rows, then both
 * paths must answer the case's state, and the control plane's owner check must accept exactly the
 * valid keys (401 otherwise).
 */
import assert from 'node:assert/strict';
import { generateSecret, hashSecret, secretPrefix } from '../../lib/crypto';
import { AppError } from '../../lib/errors';
import { AccessTokens } from '../../lib/identity/access-tokens';
import { authenticateApiKeyFresh } from '../../lib/identity/api-keys';
import { credentialState } from '../../lib/identity/credential-state';
import { authenticateOwner } from '../../api/auth/principals';
import { createAuthenticator } from '../../gateway/auth/caller';
import { ApiKeyCache } from '../../gateway/identity/api-keys';
import { CREDENTIAL_CASES } from '../support/credential-cases';
import { freshDatabaseForBlock, type TestDatabase } from '../support/db';
import { captureLogs } from '../support/logs';

describe('credential validity rule: fresh lookup and gateway cache agree (PostgreSQL)', () => {
  let t: TestDatabase;
  freshDatabaseForBlock((db) => { t = db; });
  const secrets = new Map<string, string>();
  let cache: ApiKeyCache;

  before(async () => {
    for (const [i, c] of CREDENTIAL_CASES.entries()) {
      const secret = generateSecret('gk');
      secrets.set(c.name, secret);
      if (!c.issued) continue;
      const [user] = await t.db('users').insert({
        email: `case-${i}@example.com`, role: 'pro', permissions: ['agent.use'],
        suspended_at: c.suspended ? t.db.fn.now() : null, deleted_at: c.deleted ? t.db.fn.now() : null,
      }).returning<Array<{ id: string }>>(['id']);
      await t.db('api_keys').insert({
        user_id: user!.id, name: c.name.slice(0, 60), key_hash: hashSecret(secret), prefix: secretPrefix(secret),
        revoked_at: c.revoked ? t.db.fn.now() : null,
        expires_at: c.expiresInMs === undefined ? null : new Date(Date.now() + c.expiresInMs),
      });
    }
    cache = new ApiKeyCache(t.db, captureLogs('credential-rule').log);
    await cache.refresh();
  });

  for (const c of CREDENTIAL_CASES) {
    it(`${c.name}: ${c.expected} on both paths`, async () => {
      const secret = secrets.get(c.name)!;

      const fresh = await authenticateApiKeyFresh(t.db, secret);
      assert.equal(fresh.state, c.expected, 'the fresh lookup (control-plane API)');
      assert.equal(fresh.key === undefined, !c.issued, 'a key row is returned whenever one exists');

      assert.equal(credentialState(cache.lookup(secret)), c.expected, 'the gateway key cache');
      const check = createAuthenticator({ userAuthEnabled: true, keys: cache }).check(`Bearer ${secret}`);
      assert.equal(check.ok ? 'valid' : check.state, c.expected, 'the inference authenticator');

      const deps = { db: t.db, tokens: new AccessTokens('credential-rule-test-secret-32-bytes!!', 900), adminToken: undefined };
      const owner = authenticateOwner(deps, `Bearer ${secret}`);
      if (c.expected === 'valid') {
        assert.deepEqual(await owner, { userId: fresh.key!.userId, role: 'pro', permissions: ['agent.use'] });
      } else {
        await assert.rejects(owner, (err: unknown) => err instanceof AppError && err.status === 401);
      }
    });
  }
});
