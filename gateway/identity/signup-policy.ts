/**
 * Whether public sign-up is open and whether it needs e-mail verification (docs/identity.md,
 * docs/site-config.md):
 * - a misconfigured distribution mode, or an active manifest that failed, closes sign-up;
 * - an active manifest with `features.public_signup: false` closes it, and nothing reopens it;
 * - otherwise the runtime switch `signup_enabled` (site_settings) wins over `SIGNUP_ENABLED`;
 * - with a database whose settings could not be read within 1 second on the latest read (or not yet
 *   at all), sign-up is closed until a read answers in time (the settings cache retries every 5 seconds).
 * `signup_require_email_verification` likewise overrides `SIGNUP_REQUIRE_EMAIL_VERIFICATION`.
 */
import type { GatewayDeps } from '../deps';

export interface SignupState {
  open: boolean;
  /** Why it is closed (shown in the 403). */
  reason: string;
  requireVerification: boolean;
}

export const SIGNUP_SWITCH = 'signup_enabled';
export const VERIFICATION_SWITCH = 'signup_require_email_verification';

export function signupState(deps: Pick<GatewayDeps, 'distribution' | 'settings' | 'siteSettings' | 'database'>): SignupState {
  const requireVerification = deps.siteSettings.flag(VERIFICATION_SWITCH, deps.settings.SIGNUP_REQUIRE_EMAIL_VERIFICATION);
  const closed = (reason: string): SignupState => ({ open: false, reason, requireVerification });
  const d = deps.distribution;
  if (d.status === 'misconfigured') return closed('the distribution configuration mode is invalid');
  if (d.status === 'failed') return closed('the active distribution manifest failed to load');
  if (d.status === 'active' && d.manifest.features?.public_signup === false) return closed('the distribution disables public sign-up');
  if (deps.database.configured && !deps.siteSettings.current) return closed('the sign-up switch cannot be read right now; try again shortly');
  if (!deps.siteSettings.flag(SIGNUP_SWITCH, deps.settings.SIGNUP_ENABLED)) return closed('sign-up is turned off');
  return { open: true, reason: '', requireVerification };
}
