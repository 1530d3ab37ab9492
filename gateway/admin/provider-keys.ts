/**
 * Provider keys (docs/runtime-config.md): keys added at runtime join the key pool of every route
 * with that provider label; environment keys (the keys configured in the files) can be taken out of
 * rotation and put back by fingerprint; either kind can be reserved for a minimum user role
 * (`min_role`, stored and listed). A key is accepted once and afterwards shown only as prefix and
 * fingerprint; it never appears in a response or a log line.
 */
import type Router from '@koa/router';
import { createRouter, type AccessGuard } from '../../lib/http/route-access';
import { documentRoute } from '../../lib/http/route-docs';
import { z } from 'zod';
import { AppError } from '../../lib/errors';
import type { GatewayDeps } from '../deps';
import { ROLES, type Role } from '../registry/types';
import { probeUpstream } from '../runtime-config/probe';
import { keyFingerprint, keyPrefix, keyView } from '../runtime-config/secrets';
import type { ProviderKeyRow } from '../runtime-config/types';
import type { GatewayState } from '../surfaces/state';
import { adminBody, dbOf, adminRoute } from './http';
import { knownProvider } from './providers';

const role = z.enum(ROLES as [Role, ...Role[]]);
const provider = z.string().min(1).max(64);
const addBody = z.object({ provider, api_key: z.string().min(8), label: z.string().max(200).optional(), min_role: role.nullable().optional() }).strict();
const verifyBody = z.object({ provider, api_key: z.string().min(1) }).strict();
const minRoleBody = z.object({ min_role: role.nullable() }).strict();
const envKeyBody = z.object({ provider, fingerprint: z.string().regex(/^[0-9a-f]{12}$/, '12 lowercase hex characters') }).strict();
const envMinRoleBody = envKeyBody.extend({ min_role: role.nullable() }).strict();

function keyRowView(row: ProviderKeyRow): Record<string, unknown> {
  return {
    id: row.id, provider: row.provider, label: row.label, prefix: row.key_prefix, fingerprint: row.fingerprint,
    min_role: row.min_role, disabled: row.disabled_at !== null,
  };
}

function providerOr404(deps: GatewayDeps, name: string): string {
  if (!knownProvider(deps, name)) throw new AppError('not_found', `Unknown provider '${name}'`, { param: 'provider' });
  return name;
}

function keyOr404(deps: GatewayDeps, id: string): ProviderKeyRow {
  const row = /^\d+$/.test(id) ? deps.runtimeConfig.state.providerKeys.find((k) => k.id === id) : undefined;
  if (!row) throw new AppError('not_found', `Unknown provider key '${id}'`, { param: 'key_id' });
  return row;
}

/** Keys configured in the files for a provider label, by fingerprint. */
function envKeys(deps: GatewayDeps, label: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const model of deps.runtimeConfig.base.models) {
    for (const route of model.routes) if (route.providerLabel === label) for (const key of route.apiKeys) out.set(keyFingerprint(key), key);
  }
  return out;
}

function envKeyOr404(deps: GatewayDeps, label: string, fingerprint: string): string {
  const key = envKeys(deps, label).get(fingerprint);
  if (!key) throw new AppError('not_found', `Provider '${label}' has no environment key with fingerprint ${fingerprint}`, { param: 'fingerprint' });
  return key;
}

function envKeyViews(deps: GatewayDeps): Array<Record<string, unknown>> {
  const { state } = deps.runtimeConfig;
  const labels = new Set(deps.runtimeConfig.base.models.flatMap((m) => m.routes.map((r) => r.providerLabel)));
  return [...labels].sort().flatMap((label) => [...envKeys(deps, label).values()].map((key) => {
    const fingerprint = keyFingerprint(key);
    return {
      provider: label, ...keyView(key),
      disabled: state.disabledEnvKeys.some((d) => d.provider === label && d.fingerprint === fingerprint),
      min_role: state.envKeyMinRoles.find((d) => d.provider === label && d.fingerprint === fingerprint)?.min_role ?? null,
    };
  }));
}

/** The current view of one added key (after a change). */
const currentKey = (deps: GatewayDeps, id: string) => keyRowView(keyOr404(deps, id));

function addedKeyRoutes(router: Router<GatewayState>, deps: GatewayDeps, admin: AccessGuard<GatewayState>): void {
  router.get('/admin/provider-keys', admin, (ctx) => {
    ctx.body = { keys: deps.runtimeConfig.state.providerKeys.map(keyRowView), env_keys: envKeyViews(deps) };
  });
  router.post('/admin/provider-keys', admin, async (ctx) => {
    const body = await adminBody(ctx, addBody);
    providerOr404(deps, body.provider);
    const fingerprint = keyFingerprint(body.api_key);
    if (deps.runtimeConfig.state.providerKeys.some((k) => k.provider === body.provider && k.fingerprint === fingerprint)) {
      throw new AppError('conflict', `This key is already stored for '${body.provider}' (fingerprint ${fingerprint})`, { param: 'api_key' });
    }
    const id = await deps.runtimeConfig.change(dbOf(deps), async (trx) => {
      const [row] = await trx('provider_api_keys').insert({
        provider: body.provider, label: body.label ?? null, api_key: body.api_key, key_prefix: keyPrefix(body.api_key), fingerprint, min_role: body.min_role ?? null,
      }).returning<Array<{ id: string | number }>>('id');
      return String(row!.id);
    });
    ctx.status = 201;
    ctx.body = currentKey(deps, id);
  });
  router.post('/admin/provider-keys/verify', admin, async (ctx) => {
    const body = await adminBody(ctx, verifyBody);
    providerOr404(deps, body.provider);
    const custom = deps.runtimeConfig.effective.providers.get(body.provider);
    const route = deps.runtimeConfig.effective.registry.models.flatMap((m) => m.routes).find((r) => r.providerLabel === body.provider);
    const target = custom ? { kind: custom.kind, baseUrl: custom.base_url } : { kind: route!.kind, baseUrl: route!.baseUrl };
    ctx.body = { provider: body.provider, saved: false, fingerprint: keyFingerprint(body.api_key), ...(await probeUpstream({ ...target, apiKey: body.api_key })) };
  });
  for (const [action, disabled] of [['disable', true], ['enable', false]] as const) {
    router.post(`/admin/provider-keys/:key_id/${action}`, admin, async (ctx) => {
      const row = keyOr404(deps, ctx.params.key_id!);
      await deps.runtimeConfig.change(dbOf(deps), (trx) => trx('provider_api_keys').where({ id: row.id }).update({ disabled_at: disabled ? trx.fn.now() : null, updated_at: trx.fn.now() }));
      ctx.body = currentKey(deps, row.id);
    });
  }
  router.post('/admin/provider-keys/:key_id/min-role', admin, async (ctx) => {
    const row = keyOr404(deps, ctx.params.key_id!);
    const body = await adminBody(ctx, minRoleBody);
    await deps.runtimeConfig.change(dbOf(deps), (trx) => trx('provider_api_keys').where({ id: row.id }).update({ min_role: body.min_role, updated_at: trx.fn.now() }));
    ctx.body = currentKey(deps, row.id);
  });
  router.delete('/admin/provider-keys/:key_id', admin, async (ctx) => {
    const row = keyOr404(deps, ctx.params.key_id!);
    await deps.runtimeConfig.change(dbOf(deps), (trx) => trx('provider_api_keys').where({ id: row.id }).delete());
    ctx.body = { id: row.id, deleted: true };
  });
}

function envKeyRoutes(router: Router<GatewayState>, deps: GatewayDeps, admin: AccessGuard<GatewayState>): void {
  const envView = (label: string, fingerprint: string) => envKeyViews(deps).find((v) => v.provider === label && v.fingerprint === fingerprint);
  for (const [action, disabled] of [['disable-env', true], ['enable-env', false]] as const) {
    router.post(`/admin/provider-keys/${action}`, admin, async (ctx) => {
      const body = await adminBody(ctx, envKeyBody);
      providerOr404(deps, body.provider);
      envKeyOr404(deps, body.provider, body.fingerprint);
      await deps.runtimeConfig.change(dbOf(deps), async (trx) => {
        const row = { provider: body.provider, fingerprint: body.fingerprint };
        if (disabled) await trx('disabled_provider_env_keys').insert(row).onConflict(['provider', 'fingerprint']).ignore();
        else await trx('disabled_provider_env_keys').where(row).delete();
      });
      ctx.body = envView(body.provider, body.fingerprint);
    });
  }
  router.post('/admin/provider-keys/min-role-env', admin, async (ctx) => {
    const body = await adminBody(ctx, envMinRoleBody);
    providerOr404(deps, body.provider);
    envKeyOr404(deps, body.provider, body.fingerprint);
    await deps.runtimeConfig.change(dbOf(deps), async (trx) => {
      const where = { provider: body.provider, fingerprint: body.fingerprint };
      if (body.min_role === null) await trx('provider_env_key_min_roles').where(where).delete();
      else await trx('provider_env_key_min_roles').insert({ ...where, min_role: body.min_role }).onConflict(['provider', 'fingerprint']).merge(['min_role', 'updated_at']);
    });
    ctx.body = envView(body.provider, body.fingerprint);
  });
}

export function providerKeysRouter(deps: GatewayDeps): Router<GatewayState> {
  const router = createRouter<GatewayState>();
  const admin = adminRoute(deps);
  documentRoute(router, 'POST', '/admin/provider-keys', { body: addBody, success: 201, statuses: [409], summary: 'Adds a provider API key.' });
  documentRoute(router, 'POST', '/admin/provider-keys/verify', { body: verifyBody, summary: 'Probes a provider with a key without saving it.' });
  documentRoute(router, 'POST', '/admin/provider-keys/:key_id/disable', { noBody: true, summary: 'Takes an added key out of rotation.' });
  documentRoute(router, 'POST', '/admin/provider-keys/:key_id/enable', { noBody: true, summary: 'Puts an added key back in rotation.' });
  documentRoute(router, 'POST', '/admin/provider-keys/:key_id/min-role', { body: minRoleBody, summary: 'Sets the role an added key serves.' });
  documentRoute(router, 'POST', '/admin/provider-keys/disable-env', { body: envKeyBody, summary: 'Takes a key from the environment out of rotation.' });
  documentRoute(router, 'POST', '/admin/provider-keys/enable-env', { body: envKeyBody, summary: 'Puts a key from the environment back in rotation.' });
  documentRoute(router, 'POST', '/admin/provider-keys/min-role-env', { body: envMinRoleBody, summary: 'Sets the role a key from the environment serves.' });
  envKeyRoutes(router, deps, admin);
  addedKeyRoutes(router, deps, admin);
  return router;
}
