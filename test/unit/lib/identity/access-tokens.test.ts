/**
 * Access tokens (lib/identity/access-tokens.ts), which the gateway issues and both the gateway's
 * admin API and the control-plane API verify: a token verifies only with the shared secret, only
 * as an access token, only with a known role and a positive integer subject, and not after expiry.
 */
import assert from 'node:assert/strict';
import { AccessTokens, accessTokensFrom } from '../../../../lib/identity/access-tokens';
import { signJwt } from '../../../../lib/identity/jwt';
import { captureLogs } from '../../../support/logs';

const SECRET = 'unit-test-jwt-secret-of-32-bytes-or-more';

describe('access tokens (lib/identity)', () => {
  it('round-trips the user and role, and names its lifetime', () => {
    const tokens = new AccessTokens(SECRET, 900);
    const grant = tokens.issue({ id: '42', role: 'pro' });
    assert.equal(grant.token_type, 'bearer');
    assert.equal(grant.expires_in, 900);
    assert.deepEqual(tokens.verify(grant.access_token), { userId: 42, role: 'pro' });
  });

  it('another process with the same secret verifies it; another secret does not', () => {
    const token = new AccessTokens(SECRET, 900).issue({ id: 7, role: 'admin' }).access_token;
    assert.deepEqual(new AccessTokens(SECRET, 60).verify(token), { userId: 7, role: 'admin' });
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
    assert.deepEqual(a.verify(token), { userId: 1, role: 'free' });
    assert.equal(b.verify(token), undefined);
    assert.equal(logs.lines.filter((l) => /AUTH_JWT_SECRET is not set/.test(String(l.msg))).length, 2);
  });
});
