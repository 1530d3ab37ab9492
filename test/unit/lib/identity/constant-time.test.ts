/**
 * The one constant-time comparison (lib/identity/constant-time.ts) and the checks built on it:
 * configured tokens (admin, grant dispatch), stored digests (host credentials), JWT signatures
 * and password hashes.
 */
import assert from 'node:assert/strict';
import { generateSecret, hashSecret } from '../../../../lib/crypto';
import { isAdminToken } from '../../../../lib/identity/admin-token';
import { constantTimeEqual, secretMatches, tokenEquals } from '../../../../lib/identity/constant-time';
import { signJwt, verifyJwt } from '../../../../lib/identity/jwt';
import { hashPassword, UNMATCHABLE_PASSWORD_HASH, verifyPassword } from '../../../../lib/identity/passwords';

describe('constant-time comparison (lib/identity)', () => {
  it('compares bytes, and answers false for different lengths instead of throwing', () => {
    assert.equal(constantTimeEqual(Buffer.from('abc'), Buffer.from('abc')), true);
    assert.equal(constantTimeEqual(Buffer.from('abc'), Buffer.from('abd')), false);
    assert.equal(constantTimeEqual(Buffer.from('abc'), Buffer.from('abcd')), false);
    assert.equal(constantTimeEqual(Buffer.alloc(0), Buffer.alloc(0)), true);
  });

  it('matches configured tokens of any length, and never an absent one', () => {
    assert.equal(tokenEquals('s3cret-admin', 's3cret-admin'), true);
    assert.equal(tokenEquals('s3cret-admin', 's3cret-admin '), false);
    assert.equal(tokenEquals('short', 'a much longer configured token'), false);
    assert.equal(tokenEquals(undefined, 'configured'), false);
    assert.equal(tokenEquals('presented', undefined), false);
    assert.equal(tokenEquals(undefined, undefined), false);
  });

  it('the admin token check: the configured token only, nothing when none is configured', () => {
    assert.equal(isAdminToken('adm', 'adm'), true);
    assert.equal(isAdminToken('ADM', 'adm'), false);
    assert.equal(isAdminToken('', undefined), false);
  });

  it('matches a secret against its stored digest, and refuses a malformed digest', () => {
    const secret = generateSecret('hc');
    assert.equal(secretMatches(secret, hashSecret(secret)), true);
    assert.equal(secretMatches(`${secret}x`, hashSecret(secret)), false);
    assert.equal(secretMatches(secret, 'not hex'), false);
    assert.equal(secretMatches(secret, hashSecret(secret).slice(0, 62)), false);
  });

  it('JWT signatures and password hashes go through it: a changed byte fails', async () => {
    const token = signJwt({ sub: '7' }, 'k'.repeat(32), 60);
    assert.equal(verifyJwt(token, 'k'.repeat(32))?.sub, '7');
    assert.equal(verifyJwt(token, 'j'.repeat(32)), undefined);
    assert.equal(verifyJwt(`${token.slice(0, -2)}`, 'k'.repeat(32)), undefined, 'a truncated signature');
    const stored = await hashPassword('correct horse');
    assert.equal(await verifyPassword('correct horse', stored), true);
    assert.equal(await verifyPassword('correct horsf', stored), false);
    assert.equal(await verifyPassword('', UNMATCHABLE_PASSWORD_HASH), false);
  });
});
