/**
 * `POST /v1/responses` (spec 4.1, docs/inference-surfaces.md "`POST /v1/responses`"): built on the
 * chat path. The request is translated to chat (`translate/responses-surface/request.ts`), routed
 * like chat (fallback included), and answered as a `response` object or as Responses stream events
 * (`translate/responses-surface/stream.ts`). Errors keep the OpenAI shape `{error: {message, type,
 * code, param}}`, which is the Responses API's own.
 */
import { readJsonBody } from '../../lib/http/json-body';
import { callerOf } from '../auth/caller';
import { softReasoningEffort, responsesToChat } from '../translate/responses-surface/request';
import { chatToResponse, responseContext } from '../translate/responses-surface/response';
import { ResponsesStream } from '../translate/responses-surface/stream';
import { serveChat, type SurfaceShape } from './chat';
import { FORWARDED_TEXT, parseChatRequest } from './chat-request';
import type { GatewayContextDeps, InferenceHandler } from './state';

/** `POST /v1/responses`. */
export function responsesHandler(deps: GatewayContextDeps): InferenceHandler {
  return async (ctx) => {
    const caller = callerOf(ctx.state);
    const raw = await readJsonBody(ctx.req, deps.maxBodyBytes, FORWARDED_TEXT);
    // The row records the name asked for even when the body is refused (cleaned when built).
    const model = (raw as { model?: unknown } | undefined)?.model;
    if (typeof model === 'string') ctx.state.model = model;
    const translated = responsesToChat(raw);
    const request = parseChatRequest(translated.chat);
    const context = responseContext(request.model, translated.names);
    const shape: SurfaceShape = {
      completion: (body) => chatToResponse(body, context),
      stream: () => new ResponsesStream(context),
      bodyFor: (route, body) => softReasoningEffort(body, translated.reasoningEffort, route),
    };
    await serveChat(ctx, deps, request, caller.role, shape);
  };
}
