/**
 * `POST /v1/responses` (docs/inference-surfaces.md "`POST /v1/responses`"): built on the
 * chat path. The request is translated to chat (`translate/responses-surface/request.ts`), routed
 * like chat (fallback included), and answered as a `response` object or as Responses stream events
 * (`translate/responses-surface/stream.ts`). A route whose upstream speaks the Responses API
 * (`upstream_api: responses`) is sent the client's body (model replaced) and its answer relayed as
 * it is (`responses-relay.ts`). Errors keep the OpenAI shape `{error: {message, type,
 * code, param}}`, which is the Responses API's own.
 */
import { readJsonBody } from '../../lib/http/json-body';
import { callerOf } from '../auth/caller';
import { isAppError } from '../../lib/errors';
import type { Role } from '../registry/types';
import { mediaStandIn, softReasoningEffort, responsesToChat, type TranslatedRequest } from '../translate/responses-surface/request';
import { ToolNames } from '../translate/responses-surface/tools';
import { chatToResponse, responseContext } from '../translate/responses-surface/response';
import { ResponsesStream } from '../translate/responses-surface/stream';
import { serveChat, type SurfaceShape } from './chat';
import { chatUsageOf, relayResponsesStream } from './responses-relay';
import { FORWARDED_TEXT, parseChatRequest } from './chat-request';
import type { GatewayContextDeps, InferenceHandler } from './state';

/**
 * The chat translation of a request. A model served only by Responses-API routes needs none: when
 * the body has something chat cannot carry (an item type of a hosted tool, `previous_response_id`),
 * it goes to the upstream as it is, and the chat request is a placeholder for routing and the log.
 */
function translate(raw: unknown, deps: GatewayContextDeps, role: Role): TranslatedRequest {
  try {
    return responsesToChat(raw);
  } catch (err) {
    const body = raw as { model?: unknown; stream?: unknown } | undefined;
    if (!isAppError(err) || typeof body?.model !== 'string' || !nativeOnly(deps, body.model, role)) throw err;
    const media = mediaStandIn((raw as { input?: unknown }).input);
    return { chat: { model: body.model, messages: [{ role: 'user', content: media.length > 0 ? media : '' }], stream: body.stream }, names: new ToolNames(), reasoningEffort: undefined };
  }
}

function nativeOnly(deps: GatewayContextDeps, name: string, role: Role): boolean {
  try {
    const routes = deps.registry.resolve(name, role, 'chat').routes;
    return routes.length > 0 && routes.every((r) => r.upstreamApi === 'responses');
  } catch {
    return false; // serveChat reports the lookup failure
  }
}

/** `POST /v1/responses`. */
export function responsesHandler(deps: GatewayContextDeps): InferenceHandler {
  return async (ctx) => {
    const caller = callerOf(ctx.state);
    const raw = await readJsonBody(ctx.req, deps.maxBodyBytes, FORWARDED_TEXT);
    // The row records the name asked for even when the body is refused (cleaned when built).
    const model = (raw as { model?: unknown } | undefined)?.model;
    if (typeof model === 'string') ctx.state.model = model;
    const translated = translate(raw, deps, caller.role);
    const request = parseChatRequest(translated.chat);
    if (request.structuredOutput !== undefined) request.structuredOutput = 'text.format'; // the client's name for it
    const context = responseContext(request.model, translated.names);
    const shape: SurfaceShape = {
      completion: (body) => chatToResponse(body, context),
      stream: () => new ResponsesStream(context),
      bodyFor: (route, body) => softReasoningEffort(body, translated.reasoningEffort, route),
      // A Responses-API upstream gets the client's body itself, only `model` replaced.
      native: {
        serves: (route) => route.upstreamApi === 'responses',
        surface: 'responses',
        body: (route) => JSON.stringify({ ...(raw as Record<string, unknown>), model: route.providerModelId }),
        headers: undefined,
        // The upstream's own response object goes to the client as it is; its usage feeds the request log.
        completion: (upstream, route) => ({ body: upstream, usage: chatUsageOf((upstream as { usage?: unknown }).usage, route) }),
        relayStream: relayResponsesStream,
      },
    };
    await serveChat(ctx, deps, request, caller.role, shape);
  };
}
