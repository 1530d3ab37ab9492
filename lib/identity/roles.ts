/**
 * Account roles, lowest first: `free` < `pro` < `internal` < `admin`. A credential
 * carries its owner's role; model visibility (`required_role`) is decided on it.
 */

export type Role = 'free' | 'pro' | 'internal' | 'admin';
export const ROLES: readonly Role[] = ['free', 'pro', 'internal', 'admin'];

/** Whether `value` names a role. */
export function isRole(value: unknown): value is Role {
  return ROLES.includes(value as Role);
}

/** The role stored on an account row; an unknown value counts as `free` (the least privilege). */
export function roleOf(value: string): Role {
  return isRole(value) ? value : 'free';
}
