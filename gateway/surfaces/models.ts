/**
 * `GET /v1/models`: one entry per public id and per alias the caller's role may see.
 * No key is needed; a valid key (or auth turned off) only decides whether role-restricted
 * models are included. Item fields beyond `id`/`object`/`on_demand` are this gateway's choice.
 */
import type Router from '@koa/router';
import { createRouter, publicAccess } from '../../lib/http/route-access';
import { documentRoute } from '../../lib/http/route-docs';
import { ensureGrantCached } from '../agent-grants/grant-cache';
import { canSee } from '../auth/caller';
import { bearerToken } from '../../lib/http/json-body';
import type { Model } from '../registry';
import type { Role } from '../registry/types';
import type { GatewayContextDeps, GatewayState } from './state';

export interface ModelListItem {
  id: string;
  object: 'model';
  created: number;
  owned_by: string;
  name: string;
  model_type: Model['modelType'];
  on_demand: boolean;
  context_length: number;
  max_output_length: number;
  /** On an id's entry: its aliases. */
  aliases?: readonly string[];
  /** On an alias's entry: the id it resolves to. */
  alias_of?: string;
  /** Present (true) only for a scripted demo model (registry key `demo: true`), so consoles can mark it. */
  demo?: true;
}

const CREATED = Math.floor(Date.now() / 1000);

function item(name: string, model: Model): ModelListItem {
  const base = {
    id: name, object: 'model' as const, created: CREATED, owned_by: 'gateway', name: model.name, model_type: model.modelType,
    on_demand: model.onDemand, context_length: model.contextLength, max_output_length: model.maxOutputLength,
    ...(model.demo ? { demo: true as const } : {}),
  };
  return name === model.id ? { ...base, aliases: model.aliases } : { ...base, alias_of: model.id };
}

/**
 * The role deciding what the listing shows: a valid key's role, else none (anonymous). A sent
 * key is still an authentication: a blocked source gets 429, and a key that fails counts.
 */
function listingRole(deps: GatewayContextDeps, authorization: string | undefined, state: GatewayState, path: string): Role | undefined {
  if (!authorization || !state.client) return deps.authenticator.authenticate(undefined)?.role;
  deps.gate.refuseBlocked(state.client, authorization);
  const result = deps.authenticator.check(authorization);
  if (result.ok) return result.caller.role;
  if (result.state !== 'missing') deps.gate.recordFailure(state.client, { path, reason: result.state, credential: bearerToken(authorization), userId: result.key?.userId });
  return undefined;
}

export function modelsRouter(deps: GatewayContextDeps): Router<GatewayState> {
  const router = createRouter<GatewayState>();
  const open = publicAccess<GatewayState>();
  router.get('/v1/models', open, async (ctx) => {
    const client = ctx.state.client;
    if (client) await ensureGrantCached(deps.grants, bearerToken(ctx.get('authorization') || undefined), () => deps.gate.blocklist.blocked(client));
    const role = listingRole(deps, ctx.get('authorization') || undefined, ctx.state, ctx.path);
    const data: ModelListItem[] = [];
    for (const [name, model] of deps.registry.current.byName) if (canSee(role, model)) data.push(item(name, model));
    ctx.body = { object: 'list', data };
  });
  documentRoute(router, 'GET', '/v1/models', { summary: 'Models the caller may use (a key widens the list).' });
  return router;
}
