/**
 * Access tokens (lib/identity/access-tokens.ts), which the gateway issues and both the gateway's
 * admin API and the control-plane API verify: a token verifies only with the shared secret, only
 * as an access token, only with a known role and a positive integer subject, and not after expiry.
 */
import assert from 'node:assert/strict';
import { AccessTokens, accessTokensFrom } from '../../../../lib/identity/access-tokens';
import { jwtKid, signJwt } from '../../../../lib/identity/jwt';
import { captureLogs } from '../../../support/logs';

const SECRET = 'unit-test-jwt-secret-of-32-bytes-or-more';

describe('access tokens (lib/identity)', () => {
  it('round-trips the user and role, and names its lifetime', () => {
    const tokens = new AccessTokens(SECRET, 900);
    const grant = tokens.issue({ id: '42', role: 'pro' });
    assert.equal(grant.token_type, 'bearer');
    assert.equal(grant.expires_in, 900);
    assert.deepEqual(tokens.verify(grant.access_token), { userId: 42, role: 'pro', kind: 'user' });
  });

  it('another process with the same secret verifies it; another secret does not', () => {
    const token = new AccessTokens(SECRET, 900).issue({ id: 7, role: 'admin' }).access_token;
    assert.deepEqual(new AccessTokens(SECRET, 60).verify(token), { userId: 7, role: 'admin', kind: 'user' });
    assert.equal(new AccessTokens(`${SECRET}x`, 900).verify(token), undefined);
  });

  it('refuses other token types, unknown roles, malformed subjects and expired tokens', () => {
    const tokens = new AccessTokens(SECRET, 900);
    assert.equal(tokens.verify(signJwt({ sub: '7', role: 'admin', typ: 'refresh' }, SECRET, 60)), undefined);
    assert.equal(tokens.verify(signJwt({ sub: '7', role: 'root', typ: 'access' }, SECRET, 60)), undefined);
    assert.equal(tokens.verify(signJwt({ sub: '07', role: 'free', typ: 'access' }, SECRET, 60)), undefined);
    assert.equal(tokens.verify(signJwt({ sub: '0', role: 'free', typ: 'access' }, SECRET, 60)), undefined);
    const issuedLongAgo = signJwt({ sub: '7', role: 'free', typ: 'access' }, SECRET, 60, Date.now() - 61_000);
    assert.equal(tokens.verify(issuedLongAgo), undefined);
    assert.equal(tokens.verify('not.a.jwt'), undefined);
  });

  it('without AUTH_JWT_SECRET: a random per-process key, and a warning saying so', () => {
    const logs = captureLogs('access-tokens-test', 'warn');
    const a = accessTokensFrom({ AUTH_JWT_SECRET: undefined, ACCESS_TOKEN_TTL_SECONDS: 900 }, logs.log);
    const b = accessTokensFrom({ AUTH_JWT_SECRET: undefined, ACCESS_TOKEN_TTL_SECONDS: 900 }, logs.log);
    const token = a.issue({ id: 1, role: 'free' }).access_token;
    assert.deepEqual(a.verify(token), { userId: 1, role: 'free', kind: 'user' });
    assert.equal(b.verify(token), undefined);
    assert.equal(logs.lines.filter((l) => /AUTH_JWT_SECRET is not set/.test(String(l.msg))).length, 2);
  });
});

describe('access tokens: key ids and impersonation claims (lib/identity)', () => {
  it('a bootstrap token has no kid (as before rotation existed); a forged kid or a kid-less token of another secret is refused', () => {
    const tokens = new AccessTokens(SECRET, 900);
    const token = tokens.issue({ id: 7, role: 'free' }).access_token;
    assert.equal(jwtKid(token), undefined);
    const forged = signJwt({ sub: '7', role: 'free', typ: 'access' }, { secret: SECRET, kid: 'kForged' }, 60);
    assert.equal(jwtKid(forged), 'kForged');
    assert.equal(tokens.verify(forged), undefined, 'a kid the ring does not hold is refused even when signed with the bootstrap secret');
  });

  it('an impersonation token names the user as subject and the administrator as actor; half an impersonation is refused', () => {
    const tokens = new AccessTokens(SECRET, 900);
    const sid = '2b3c4d5e-1234-4abc-9def-0123456789ab';
    const token = tokens.issueImpersonation({ id: 12, role: 'pro' }, { id: 3, adminUserId: 1, adminSession: sid }, 900);
    assert.deepEqual(tokens.verify(token), { userId: 12, role: 'pro', kind: 'impersonation', sessionId: sid, impersonation: { id: 3, adminUserId: 1, adminSession: sid } });
    assert.equal(tokens.verify(signJwt({ sub: '12', role: 'pro', typ: 'access', act: { sub: '1' } }, SECRET, 60)), undefined, 'act without imp and sid');
    assert.equal(tokens.verify(signJwt({ sub: '12', role: 'pro', typ: 'access', imp: 3, sid }, SECRET, 60)), undefined, 'imp without act');
  });
});
