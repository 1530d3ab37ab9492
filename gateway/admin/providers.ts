/**
 * Providers (docs/runtime-config.md): custom provider definitions (generic-compatible kinds only; a slug
 * owned by code or by the registry file is refused here and skipped at boot), the rotation switch
 * (`disabled_providers`: every route with that provider label gets effective weight 0) and the
 * routing-table listing `GET /admin/providers/routable`. Keys show only prefix and fingerprint.
 */
import type Router from '@koa/router';
import { createRouter, type AccessGuard } from '../../lib/http/route-access';
import { documentRoute } from '../../lib/http/route-docs';
import { z } from 'zod';
import { AppError } from '../../lib/errors';
import { BUILTIN_ADAPTER_KINDS, resolveAdapterKind } from '../adapters';
import type { GatewayDeps } from '../deps';
import { registryLabels } from '../runtime-config/overlay';
import { probeUpstream } from '../runtime-config/probe';
import { keyFingerprint, keyView } from '../runtime-config/secrets';
import type { ProviderDefinitionRow } from '../runtime-config/types';
import type { GatewayState } from '../surfaces/state';
import { adminBody, dbOf, invalid, adminRoute } from './http';

const slug = z.string().regex(/^[a-z0-9_-]{1,64}$/, 'lowercase letters, digits, - and _ (at most 64)');
const httpUrl = z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' });
const definitionFields = {
  display_name: z.string().trim().min(1).max(200).optional(),
  base_url: httpUrl,
  kind: z.string().min(1).optional(),
  /** Write-only; on PATCH an empty string keeps the saved key. */
  api_key: z.string().optional(),
};
const createBody = z.object({ slug, ...definitionFields }).strict();
const verifyBody = z.object({ slug: slug.optional(), ...definitionFields }).strict();
const patchBody = z.object({ ...definitionFields, base_url: httpUrl.optional() }).strict();
const disabledBody = z.object({ disabled: z.boolean(), reason: z.string().max(500).optional() }).strict();

const BUILTIN = new Set(BUILTIN_ADAPTER_KINDS);

/** A generic-compatible kind, else 400 naming `kind`. */
function compatKind(kind: string | undefined): string {
  const chosen = kind ?? 'generic_compat';
  let family: string;
  try {
    family = resolveAdapterKind(chosen).family;
  } catch {
    throw invalid('kind', `unknown adapter kind '${chosen}'`);
  }
  if (family !== 'compat' || chosen.startsWith('aggregator')) throw invalid('kind', `custom providers must use a generic-compatible kind, not '${chosen}'`);
  return chosen;
}

function definitionView(row: ProviderDefinitionRow): Record<string, unknown> {
  return { slug: row.slug, display_name: row.display_name, kind: row.kind, base_url: row.base_url, key: row.api_key ? keyView(row.api_key) : null };
}

function storedDefinition(deps: GatewayDeps, provider: string): ProviderDefinitionRow {
  const row = deps.runtimeConfig.state.providers.find((p) => p.slug === provider);
  if (!row) throw new AppError('not_found', `Unknown custom provider '${provider}'`, { param: 'provider' });
  return row;
}

/** Whether a provider name is known: a custom provider or a label of some effective route. */
export function knownProvider(deps: GatewayDeps, provider: string): boolean {
  const effective = deps.runtimeConfig.effective;
  return effective.providers.has(provider) || effective.registry.models.some((m) => m.routes.some((r) => r.providerLabel === provider));
}

function definitionRoutes(router: Router<GatewayState>, deps: GatewayDeps, admin: AccessGuard<GatewayState>): void {
  router.get('/admin/provider-definitions', admin, (ctx) => {
    ctx.body = { providers: deps.runtimeConfig.state.providers.map(definitionView) };
  });
  router.post('/admin/provider-definitions', admin, async (ctx) => {
    const body = await adminBody(ctx, createBody);
    if (BUILTIN.has(body.slug)) throw invalid('slug', `'${body.slug}' is owned by code (a built-in adapter kind)`);
    if (registryLabels(deps.runtimeConfig.base).has(body.slug)) throw invalid('slug', `'${body.slug}' is owned by the registry file`);
    if (deps.runtimeConfig.state.providers.some((p) => p.slug === body.slug)) throw new AppError('conflict', `Custom provider '${body.slug}' already exists`, { param: 'slug' });
    const row: ProviderDefinitionRow = {
      slug: body.slug, display_name: body.display_name ?? body.slug, kind: compatKind(body.kind), base_url: body.base_url,
      api_key: body.api_key || null, api_key_fingerprint: body.api_key ? keyFingerprint(body.api_key) : null,
    };
    await deps.runtimeConfig.change(dbOf(deps), (trx) => trx('provider_definitions').insert(row));
    ctx.status = 201;
    ctx.body = definitionView(row);
  });
  router.post('/admin/provider-definitions/verify', admin, async (ctx) => {
    const body = await adminBody(ctx, verifyBody);
    ctx.body = { saved: false, ...(await probeUpstream({ kind: compatKind(body.kind), baseUrl: body.base_url, apiKey: body.api_key || undefined })) };
  });
  router.patch('/admin/provider-definitions/:provider', admin, async (ctx) => {
    const previous = storedDefinition(deps, ctx.params.provider!);
    const body = await adminBody(ctx, patchBody);
    const key = body.api_key ? body.api_key : previous.api_key;
    const row: ProviderDefinitionRow = {
      ...previous, display_name: body.display_name ?? previous.display_name, base_url: body.base_url ?? previous.base_url,
      kind: body.kind !== undefined ? compatKind(body.kind) : previous.kind, api_key: key, api_key_fingerprint: key ? keyFingerprint(key) : null,
    };
    await deps.runtimeConfig.change(dbOf(deps), (trx) => trx('provider_definitions').where({ slug: row.slug }).update({ ...row, updated_at: trx.fn.now() }));
    ctx.body = definitionView(row);
  });
  router.delete('/admin/provider-definitions/:provider', admin, async (ctx) => {
    const row = storedDefinition(deps, ctx.params.provider!);
    const state = deps.runtimeConfig.state;
    if (state.candidates.some((c) => c.provider === row.slug) || state.routeConfigs.some((c) => c.config.provider === row.slug)) {
      throw new AppError('conflict', `Custom provider '${row.slug}' is used by runtime routes or retargets; remove them first`, { param: 'provider' });
    }
    await deps.runtimeConfig.change(dbOf(deps), (trx) => trx('provider_definitions').where({ slug: row.slug }).delete());
    ctx.body = { slug: row.slug, deleted: true };
  });
}

/** One provider label's routing-table entry. */
function routableEntry(deps: GatewayDeps, provider: string): Record<string, unknown> {
  const { effective, state } = deps.runtimeConfig;
  const routes = effective.registry.models.flatMap((m) => m.routes.filter((r) => r.providerLabel === provider).map((r) => ({ model: m, route: r })));
  const disabled = state.disabledProviders.find((d) => d.provider === provider);
  return {
    provider, custom: effective.providers.has(provider), disabled: disabled !== undefined, reason: disabled?.reason ?? null,
    routes: routes.length, routable_routes: routes.filter((x) => x.route.weight > 0).length,
    models: [...new Set(routes.filter((x) => x.route.weight > 0).map((x) => x.model.id))],
  };
}

function rotationRoutes(router: Router<GatewayState>, deps: GatewayDeps, admin: AccessGuard<GatewayState>): void {
  router.patch('/admin/providers/:provider/disabled', admin, async (ctx) => {
    const provider = ctx.params.provider!;
    if (!knownProvider(deps, provider)) throw new AppError('not_found', `Unknown provider '${provider}'`, { param: 'provider' });
    const body = await adminBody(ctx, disabledBody);
    await deps.runtimeConfig.change(dbOf(deps), async (trx) => {
      if (!body.disabled) await trx('disabled_providers').where({ provider }).delete();
      else await trx('disabled_providers').insert({ provider, reason: body.reason ?? null }).onConflict('provider').merge(['reason']);
    });
    ctx.body = routableEntry(deps, provider);
  });
  router.get('/admin/providers/routable', admin, (ctx) => {
    const { effective } = deps.runtimeConfig;
    const labels = new Set([...effective.registry.models.flatMap((m) => m.routes.map((r) => r.providerLabel)), ...effective.providers.keys()]);
    ctx.body = { providers: [...labels].sort().map((p) => routableEntry(deps, p)) };
  });
}

export function providersRouter(deps: GatewayDeps): Router<GatewayState> {
  const router = createRouter<GatewayState>();
  const admin = adminRoute(deps);
  documentRoute(router, 'POST', '/admin/provider-definitions', { body: createBody, success: 201, statuses: [409], summary: 'Defines a custom provider.' });
  documentRoute(router, 'POST', '/admin/provider-definitions/verify', { body: verifyBody, summary: 'Probes a provider definition without saving it.' });
  documentRoute(router, 'PATCH', '/admin/provider-definitions/:provider', { body: patchBody, summary: 'Changes a custom provider.' });
  documentRoute(router, 'DELETE', '/admin/provider-definitions/:provider', { statuses: [409], summary: 'Deletes a custom provider no route uses.' });
  documentRoute(router, 'PATCH', '/admin/providers/:provider/disabled', { body: disabledBody, summary: 'Takes a provider out of rotation, or back in.' });
  definitionRoutes(router, deps, admin);
  rotationRoutes(router, deps, admin);
  return router;
}
