/**
 * `POST /v1/embeddings`: the model's routes are an ordered fallback chain (configured
 * order; weight 0 routes are skipped), each called at its embeddings path (docs/registry.md).
 */
import { AppError } from '../../lib/errors';
import { abortOnClientClose } from '../../lib/http/client-abort';
import { readJsonBody } from '../../lib/http/json-body';
import { assertLoggableText, FORWARDED_TEXT } from './chat-request';
import { buildEmbeddingsBody } from '../adapters';
import { assertGrantAllows, callerOf } from '../auth/caller';
import type { Route } from '../registry';
import { runWithFallback } from '../routing/fallback';
import { attribute, sendJson, type GatewayContextDeps, type InferenceHandler } from './state';
import type { Usage } from './usage';

interface EmbeddingsRequest {
  model: string;
  body: Record<string, unknown>;
}

function isTokenArray(value: unknown): boolean {
  return Array.isArray(value) && value.every((t) => typeof t === 'number');
}

export function parseEmbeddingsRequest(raw: unknown): EmbeddingsRequest {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new AppError('invalid_request', 'Request body must be a JSON object');
  const body = raw as Record<string, unknown>;
  if (typeof body.model !== 'string' || body.model.length === 0) {
    throw new AppError('invalid_request', `Invalid field 'model': ${body.model === undefined ? 'is required' : 'must be a non-empty string'}`, { param: 'model' });
  }
  const { input } = body;
  const valid = (typeof input === 'string' && input.length > 0)
    || (Array.isArray(input) && input.length > 0 && (input.every((i) => typeof i === 'string') || isTokenArray(input) || input.every(isTokenArray)));
  if (!valid) {
    throw new AppError('invalid_request', "Invalid field 'input': must be a non-empty string, an array of strings, or token arrays", { param: 'input' });
  }
  return { model: body.model, body };
}

/** `POST /v1/embeddings`. */
export function embeddingsHandler(deps: GatewayContextDeps): InferenceHandler {
  return async (ctx) => {
    const caller = callerOf(ctx.state);
    const request = parseEmbeddingsRequest(await readJsonBody(ctx.req, deps.maxBodyBytes, FORWARDED_TEXT));
    ctx.state.model = request.model; // the row records the name asked for (cleaned when built), even when refused
    assertLoggableText('model', request.model);
    const model = deps.registry.resolve(request.model, caller.role, 'embeddings');
    ctx.state.model = model.id;
    assertGrantAllows(caller, model.id);
    deps.limits.enter(caller, model.id, ctx.res);
    const signal = abortOnClientClose(ctx.res);
    const attempt = (route: Route) =>
      deps.upstream.postJson<Record<string, unknown>>(route, 'embeddings', JSON.stringify(buildEmbeddingsBody(route, request.body)), signal);
    const ticket = deps.routing.fixedOrder(model.routes.filter((r) => r.weight > 0), ctx.state.synthetic);
    const done = await runWithFallback(ticket.routes, attempt, {
      modelId: model.id, state: ctx.state, pinned: false, observer: ticket,
      onUpstreamAuthFailure: (route) => ctx.state.log.warn(
        { event: 'upstream_auth_misconfig', model: model.id, endpoint_id: route.endpointId, provider: route.providerLabel },
        `Embedding request failed for model=${model.id}: the upstream rejected the gateway's credential (401)`,
      ),
    });
    delete done.value._routing;
    attribute(ctx, { provider: done.route.providerLabel, base_url: done.route.baseUrl, endpoint_id: done.route.endpointId });
    ctx.state.pricing = done.route.pricing;
    ctx.state.usage = done.value.usage as Usage | undefined;
    sendJson(ctx, done.value);
  };
}
