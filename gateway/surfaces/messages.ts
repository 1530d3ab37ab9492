/**
 * The messages surface on the chat path (spec 4.1, docs/inference-surfaces.md "Messages surface"):
 * `POST /v1/messages` and `POST /v1/messages/count_tokens`, also under `/<MESSAGES_PREFIX>/v1/…`.
 * A request is translated to chat (`gateway/translate/messages-surface/request.ts`), served by
 * {@link serveChat} with one attempt (no fallback: one adapter is picked), and answered as a
 * `message` or as messages stream events. Every error on these paths is messages-shaped
 * ({@link messagesErrorBody}, applied by the server for these routes).
 */
import { readJsonBody } from '../../lib/http/json-body';
import { assertGrantAllows, callerOf } from '../auth/caller';
import type { Model } from '../registry';
import { estimateInputTokens } from '../translate/messages-surface/count-tokens';
import { messagesToChat } from '../translate/messages-surface/request';
import { chatToMessage, type MessageContext } from '../translate/messages-surface/response';
import { messagesStream } from '../translate/messages-surface/stream';
import { serveChat, type SurfaceShape } from './chat';
import { assertLoggableText, FORWARDED_TEXT, parseChatRequest } from './chat-request';
import { sendJson, type GatewayContextDeps, type InferenceContext, type InferenceHandler } from './state';

/** The surface name in the request log (also for the prefixed paths). */
export const MESSAGES_SURFACE = 'messages';

/** The messages paths served under `/v1` and under `/<prefix>/v1`. */
export function messagesPaths(prefix: string): { messages: string[]; countTokens: string[] } {
  return {
    messages: ['/v1/messages', `/${prefix}/v1/messages`],
    countTokens: ['/v1/messages/count_tokens', `/${prefix}/v1/messages/count_tokens`],
  };
}

/**
 * Where a messages-API route answers `count_tokens` itself (provided by the message-format
 * adapters): the upstream's count, or `undefined` to fall back to the local estimate. Absent: every
 * model gets the estimate.
 */
export type CountTokensUpstream = (model: Model, body: Record<string, unknown>, ctx: InferenceContext) => Promise<number | undefined>;

function shapeFor(context: MessageContext): SurfaceShape {
  return { completion: (body) => chatToMessage(body, context), stream: messagesStream(context), oneAttempt: true };
}

/** `POST /v1/messages`. */
export function messagesHandler(deps: GatewayContextDeps): InferenceHandler {
  return async (ctx) => {
    ctx.state.surface = MESSAGES_SURFACE;
    const caller = callerOf(ctx.state);
    const raw = await readJsonBody(ctx.req, deps.maxBodyBytes, FORWARDED_TEXT);
    const client = raw as { model: string; stop_sequences?: string[] } | undefined;
    // The row records the name asked for even when the body is refused (cleaned when built).
    if (typeof client?.model === 'string') ctx.state.model = client.model;
    const chat = messagesToChat(raw);
    const request = parseChatRequest(chat);
    await serveChat(ctx, deps, request, caller.role, shapeFor({ model: client!.model, stopSequences: client!.stop_sequences }));
  };
}

/**
 * `POST /v1/messages/count_tokens`: the model must exist and be visible to the caller (404
 * otherwise); the answer is `{input_tokens}` from the upstream when a {@link CountTokensUpstream}
 * offers it, else the local estimate.
 */
export function countTokensHandler(deps: GatewayContextDeps, upstream?: CountTokensUpstream): InferenceHandler {
  return async (ctx) => {
    ctx.state.surface = MESSAGES_SURFACE;
    const caller = callerOf(ctx.state);
    const raw = await readJsonBody(ctx.req, deps.maxBodyBytes, FORWARDED_TEXT);
    const chat = messagesToChat(raw, { countOnly: true }) as { model: string; messages: unknown[]; tools?: unknown };
    ctx.state.model = chat.model;
    assertLoggableText('model', chat.model);
    const model = deps.registry.resolve(chat.model, caller.role, 'chat');
    ctx.state.model = model.id;
    assertGrantAllows(caller, model.id);
    const counted = upstream ? await upstream(model, raw as Record<string, unknown>, ctx) : undefined;
    sendJson(ctx, { input_tokens: counted ?? estimateInputTokens(chat) });
  };
}
