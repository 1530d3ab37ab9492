/**
 * The credential validity rule (lib/identity/credential-state.ts) over the shared table of cases
 * (test/support/credential-cases.ts): the rule itself, the gateway's hot path (the key cache
 * behind the inference authenticator) and the inference grant cache's state all answer the same.
 * The same table runs against PostgreSQL in test/integration/identity-credential-rule.test.ts.
 */
import assert from 'node:assert/strict';
import { generateSecret, hashSecret, secretPrefix } from '../../../../lib/crypto';
import { accountState, credentialState } from '../../../../lib/identity/credential-state';
import { grantState } from '../../../../gateway/agent-grants/grant-cache';
import { createAuthenticator } from '../../../../gateway/auth/caller';
import { ApiKeyCache } from '../../../../gateway/identity/api-keys';
import { CREDENTIAL_CASES, factsOf } from '../../../support/credential-cases';
import { captureLogs } from '../../../support/logs';

describe('credential validity rule (lib/identity)', () => {
  for (const c of CREDENTIAL_CASES) {
    it(`${c.name}: ${c.expected}`, () => {
      // The clock of this test, not of the file's loading: a loaded machine can be a minute apart.
      const now = Date.now();
      assert.equal(credentialState(factsOf(c, now), now), c.expected, 'the rule');

      const cache = new ApiKeyCache(null, captureLogs('credential-cases').log);
      const secret = generateSecret('gk');
      const issued = factsOf(c, now);
      // Another key in the cache, so a secret never issued is looked up in a non-empty map.
      cache.put(hashSecret(generateSecret('gk')), { id: 999, userId: 999, prefix: 'gk_other', role: 'free', revoked: false, expiresAt: null, userSuspended: false, userDeleted: false });
      if (issued) cache.put(hashSecret(secret), { id: 1, userId: 1, prefix: secretPrefix(secret), role: 'pro', ...issued });
      assert.equal(credentialState(cache.lookup(secret)), c.expected, 'the gateway key cache');

      const check = createAuthenticator({ userAuthEnabled: true, keys: cache }).check(`Bearer ${secret}`);
      if (c.expected === 'valid') assert.deepEqual(check.ok && check.caller, { role: 'pro', via: 'api_key', userId: 1, apiKeyId: 1, keyPrefix: secretPrefix(secret) });
      else assert.equal(!check.ok && check.state, c.expected, 'the inference authenticator');

      const grant = issued && { grantId: 'g1', userId: 1, role: 'pro' as const, model: 'm', kind: 'turn' as const, prefix: 'agr_x', ...issued, expiresAt: issued.expiresAt ?? now + 3_600_000 };
      assert.equal(grantState(grant || undefined, now), c.expected, 'the inference grant cache');
    });
  }

  it('an account alone: deleted before suspended, unknown when absent', () => {
    assert.equal(accountState(undefined), 'unknown');
    assert.equal(accountState({ userSuspended: false, userDeleted: false }), 'valid');
    assert.equal(accountState({ userSuspended: true, userDeleted: false }), 'user_suspended');
    assert.equal(accountState({ userSuspended: true, userDeleted: true }), 'user_deleted');
  });

  it('a key expires at its expiry instant, not a millisecond later', () => {
    const now = Date.now();
    const facts = { revoked: false, expiresAt: now, userSuspended: false, userDeleted: false };
    assert.equal(credentialState(facts, now - 1), 'valid');
    assert.equal(credentialState(facts, now), 'expired');
  });
});
