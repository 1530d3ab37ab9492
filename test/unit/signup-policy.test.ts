/**
 * Whether sign-up is open (docs/identity.md): distribution state first, then the runtime switch
 * over `SIGNUP_ENABLED`, closed while settings are unreadable.
 */
import assert from 'node:assert/strict';
import { signupState } from '../../gateway/identity/signup-policy';
import type { DistributionState } from '../../gateway/registry/manifest';
import { loadSettings } from '../../lib/settings';

function deps(options: { distribution?: DistributionState; env?: Record<string, string>; stored?: Record<string, unknown>; configured?: boolean; ready?: boolean }) {
  const stored = options.stored ?? {};
  return {
    distribution: options.distribution ?? { status: 'none' as const },
    settings: loadSettings(options.env ?? {}),
    database: { configured: options.configured ?? true } as never,
    siteSettings: {
      current: options.ready ?? true,
      flag: (key: string, fallback: boolean) => (typeof stored[key] === 'boolean' ? (stored[key]) : fallback),
    } as never,
  };
}

const manifest = (publicSignup: boolean | undefined) => ({ schema_version: 1, ...(publicSignup === undefined ? {} : { features: { public_signup: publicSignup } }) }) as never;

describe('sign-up policy', () => {
  it('is open by default and requires verification by default', () => {
    assert.deepEqual(signupState(deps({})), { open: true, reason: '', requireVerification: true });
  });

  it('lets the runtime switches win over SIGNUP_ENABLED and SIGNUP_REQUIRE_EMAIL_VERIFICATION', () => {
    assert.equal(signupState(deps({ env: { SIGNUP_ENABLED: 'false' } })).open, false);
    assert.equal(signupState(deps({ env: { SIGNUP_ENABLED: 'false' }, stored: { signup_enabled: true } })).open, true);
    assert.equal(signupState(deps({ stored: { signup_enabled: false } })).open, false);
    assert.equal(signupState(deps({ env: { SIGNUP_REQUIRE_EMAIL_VERIFICATION: 'false' } })).requireVerification, false);
    assert.equal(signupState(deps({ env: { SIGNUP_REQUIRE_EMAIL_VERIFICATION: 'false' }, stored: { signup_require_email_verification: true } })).requireVerification, true);
  });

  it('closes for a misconfigured or failed distribution and for public_signup: false, which nothing reopens', () => {
    assert.equal(signupState(deps({ distribution: { status: 'misconfigured', reason: 'mode' } })).open, false);
    assert.equal(signupState(deps({ distribution: { status: 'failed', error: 'x' } })).open, false);
    const closed = signupState(deps({ distribution: { status: 'active', manifest: manifest(false), dir: '/' }, env: { SIGNUP_ENABLED: 'true' }, stored: { signup_enabled: true } }));
    assert.equal(closed.open, false);
    assert.match(closed.reason, /distribution disables public sign-up/);
    assert.equal(signupState(deps({ distribution: { status: 'active', manifest: manifest(true), dir: '/' }, stored: { signup_enabled: false } })).open, false, 'true or absent: the switch wins');
    assert.equal(signupState(deps({ distribution: { status: 'active', manifest: manifest(undefined), dir: '/' } })).open, true);
  });

  it('is closed while the settings of a configured database are unreadable, and open without a database', () => {
    assert.equal(signupState(deps({ ready: false })).open, false);
    assert.equal(signupState(deps({ ready: false, configured: false })).open, true);
  });
});
