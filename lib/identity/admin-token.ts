/**
 * The static operator credential `ADMIN_TOKEN` (docs/identity.md): it opens the gateway's admin API and
 * the control plane's operator routes alike, so both processes check it here.
 */
import { tokenEquals } from './constant-time';

/** Whether `presented` is the configured admin token (constant time; false when none is configured). */
export function isAdminToken(presented: string, adminToken: string | undefined): boolean {
  return tokenEquals(presented, adminToken);
}
