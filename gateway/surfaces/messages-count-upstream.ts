/**
 * `count_tokens` forwarded to a messages-API upstream (docs/inference-surfaces.md "Messages
 * surface"): for a model with a route of a message-format kind (the first such route in the
 * model's order with weight above 0), the upstream's own count; `undefined` otherwise, and when
 * that upstream fails (logged as `count_tokens_upstream_failed`), so the caller answers the local
 * estimate instead of an error for what is an estimate anyway.
 */
import { abortOnClientClose } from '../../lib/http/client-abort';
import { resolveAdapterKind } from '../adapters';
import type { Model, Route } from '../registry';
import { countTokensUpstream } from '../translate/messages-upstream/count-tokens';
import { forwardedHeaders, type CountTokensUpstream } from './messages';
import type { GatewayContextDeps } from './state';

/** The route a model's token count is asked of, if any. */
export function countingRoute(model: Model): Route | undefined {
  return model.routes.find((route) => route.weight > 0 && resolveAdapterKind(route.kind).messages !== undefined);
}

/** The {@link CountTokensUpstream} of the gateway: the first message-format route's own count. */
export function upstreamTokenCount(deps: Pick<GatewayContextDeps, 'upstream'>): CountTokensUpstream {
  return async (model, body, ctx) => {
    const route = countingRoute(model);
    if (route === undefined) return undefined;
    try {
      return await countTokensUpstream(deps.upstream, route, body, abortOnClientClose(ctx.res), forwardedHeaders(ctx));
    } catch (err) {
      ctx.state.log.warn(
        { event: 'count_tokens_upstream_failed', model: model.id, endpoint_id: route.endpointId, provider: route.providerLabel, error: (err as Error).message },
        `count_tokens_upstream_failed: ${route.providerLabel} did not count tokens for model ${model.id}; answering the local estimate`,
      );
      return undefined;
    }
  };
}
