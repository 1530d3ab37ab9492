/**
 * Tier-reserved provider keys (docs/runtime-config.md): a key with a `min_role` is used only for
 * callers of at least that role. The overlay precomputes, for each model with such keys, the model
 * as each role sees it, so the hot path picks the caller's variant with one map lookup ({@link
 * RegistryHolder.resolve}). A route whose pool holds only keys reserved above the caller's role is
 * left out for that caller.
 */
import type { Model, Role, Route } from '../registry/types';
import { ROLES } from '../registry/types';
import { keyFingerprint } from './secrets';
import type { StoredState } from './types';

const RANK: Readonly<Record<Role, number>> = { free: 0, pro: 1, internal: 2, admin: 3 };

/** The minimum role of a key of a provider label, if it is reserved. */
export type KeyReservation = (label: string, key: string) => Role | undefined;

export function keyReservations(state: StoredState): KeyReservation | undefined {
  const added = new Map(state.providerKeys.filter((k) => k.min_role).map((k) => [`${k.provider}\n${k.api_key}`, k.min_role!]));
  const env = new Map(state.envKeyMinRoles.map((k) => [`${k.provider}\n${k.fingerprint}`, k.min_role]));
  if (added.size === 0 && env.size === 0) return undefined;
  return (label, key) => added.get(`${label}\n${key}`) ?? (env.size > 0 ? env.get(`${label}\n${keyFingerprint(key)}`) : undefined);
}

/** The routes a caller of `role` may use: reserved keys above the role removed, emptied routes dropped. */
function routesFor(routes: readonly Route[], role: Role, reserved: KeyReservation): Route[] | undefined {
  let changed = false;
  const out: Route[] = [];
  for (const route of routes) {
    const keys = route.apiKeys.filter((key) => {
      const min = reserved(route.providerLabel, key);
      return min === undefined || RANK[role] >= RANK[min];
    });
    if (keys.length === route.apiKeys.length) {
      out.push(route);
      continue;
    }
    changed = true;
    if (keys.length > 0) out.push({ ...route, apiKeys: keys });
  }
  return changed ? out : undefined;
}

/** `model` with per-role variants when any of its keys is reserved; else `model` itself. */
export function withRoleVariants(model: Model, reserved: KeyReservation | undefined): Model {
  if (!reserved) return model;
  const variants = new Map<Role, Model>();
  for (const role of ROLES) {
    const routes = routesFor(model.routes, role, reserved);
    if (routes) variants.set(role, { ...model, routes });
  }
  return variants.size === 0 ? model : { ...model, byRole: variants };
}
