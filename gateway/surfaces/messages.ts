/**
 * The messages surface on the chat path (docs/inference-surfaces.md "Messages surface"):
 * `POST /v1/messages` and `POST /v1/messages/count_tokens`, also under `/<MESSAGES_PREFIX>/v1/…`.
 * A request is translated to chat (`gateway/translate/messages-surface/request.ts`), served by
 * {@link serveChat} with one attempt (no fallback: one adapter is picked), and answered as a
 * `message` or as messages stream events. Every error on these paths is messages-shaped
 * ({@link messagesErrorBody}, applied by the server for these routes).
 */
import { AppError } from '../../lib/errors';
import { readJsonBody } from '../../lib/http/json-body';
import { resolveAdapterKind } from '../adapters';
import { assertGrantAllows, callerOf } from '../auth/caller';
import type { Model, Route } from '../registry';
import { estimateInputTokens } from '../translate/messages-surface/count-tokens';
import { messagesErrorEvent } from '../translate/messages-surface/errors';
import { readMessagesRequest, type MessagesRequest } from '../translate/messages-surface/request';
import { chatToMessage, type MessageContext } from '../translate/messages-surface/response';
import { messagesStream } from '../translate/messages-surface/stream';
import { passthroughBody, passthroughMessage } from '../translate/messages-upstream/passthrough';
import { PassthroughStreamRelay } from '../translate/messages-upstream/passthrough-stream';
import { UpstreamError } from '../upstream/upstream-error';
import { serveChat, type NativeRoutes, type SurfaceShape } from './chat';
import { relayStream } from './chat-stream';
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

/** Whether a route speaks the messages API (a message-format kind): it gets the request as sent. */
export function speaksMessages(route: Pick<Route, 'kind'>): boolean {
  return resolveAdapterKind(route.kind).messages !== undefined;
}

/**
 * The client's `anthropic-beta` header, forwarded to messages-API upstreams (the betas a request's
 * fields need: tool search, context management, …); chat upstreams have no use for it.
 */
export function forwardedHeaders(ctx: InferenceContext): Record<string, string> | undefined {
  const beta = ctx.header('anthropic-beta');
  return beta === undefined ? undefined : { 'anthropic-beta': beta };
}

/** The pass-through of a messages request on message-format routes (docs/adapters.md). */
function nativeRoutes(request: MessagesRequest, ctx: InferenceContext): NativeRoutes {
  const clientModel = request.body.model as string;
  return {
    serves: speaksMessages,
    body: (route, stream) => JSON.stringify(passthroughBody(route, request.body, stream, resolveAdapterKind(route.kind).messages!)),
    headers: forwardedHeaders(ctx),
    completion: (upstream) => passthroughMessage(upstream, clientModel),
    surface: 'messages',
    relayStream: (res, route, opened, signal, state) => relayStream(res, route, opened, signal, state, new PassthroughStreamRelay(res, route, clientModel), messagesErrorEvent),
  };
}

function shapeFor(request: MessagesRequest, ctx: InferenceContext): SurfaceShape {
  const body = request.body as { model: string; stop_sequences?: string[] };
  const context: MessageContext = { model: body.model, stopSequences: body.stop_sequences };
  return {
    completion: (chat) => chatToMessage(chat, context), stream: messagesStream(context), oneAttempt: true,
    native: nativeRoutes(request, ctx), untranslatable: request.untranslatable,
  };
}

/**
 * An upstream's 404 (a wrong upstream path or model id: the operator's configuration) answered as
 * 502: messages clients read a 404 as "your model does not exist" (Claude Code: "There's an issue
 * with the selected model"), which is the gateway's own 404 only.
 */
function upstreamNotFound(err: unknown): unknown {
  if (err instanceof AppError && err.status === 404 && err.cause instanceof UpstreamError) {
    return new AppError('upstream_error', `Upstream error: the upstream answered 404 (${err.message})`, { status: 502, cause: err.cause });
  }
  return err;
}

/** `POST /v1/messages`. */
export function messagesHandler(deps: GatewayContextDeps): InferenceHandler {
  return async (ctx) => {
    ctx.state.surface = MESSAGES_SURFACE;
    const caller = callerOf(ctx.state);
    const raw = await readJsonBody(ctx.req, deps.maxBodyBytes, FORWARDED_TEXT);
    const client = raw as { model?: unknown } | undefined;
    // The row records the name asked for even when the body is refused (cleaned when built).
    if (typeof client?.model === 'string') ctx.state.model = client.model;
    const read = readMessagesRequest(raw);
    const request = parseChatRequest(read.chat);
    try {
      await serveChat(ctx, deps, request, caller.role, shapeFor(read, ctx));
    } catch (err) {
      throw modelNotFound(upstreamNotFound(err), read);
    }
  };
}

/** The gateway's own 404 for an unknown model, naming the client's name and what was looked up when they differ. */
function modelNotFound(err: unknown, read: Pick<MessagesRequest, 'body' | 'model'>): unknown {
  if (!(err instanceof AppError) || err.code !== 'model_not_found') return err;
  const asked = read.body.model as string;
  const lookedUp = asked === read.model ? '' : ` (looked up as '${read.model}')`;
  return new AppError('model_not_found', `The model '${asked}'${lookedUp} does not exist on this gateway or your key cannot use it`, { param: 'model', cause: err });
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
    const read = readMessagesRequest(raw, { countOnly: true });
    ctx.state.model = read.model;
    assertLoggableText('model', read.model);
    let model: Model;
    try {
      model = deps.registry.resolve(read.model, caller.role, 'chat');
    } catch (err) {
      throw modelNotFound(err, read);
    }
    ctx.state.model = model.id;
    assertGrantAllows(caller, model.id);
    const counted = upstream ? await upstream(model, read.body, ctx) : undefined;
    if (counted !== undefined) return sendJson(ctx, { input_tokens: counted });
    if (read.untranslatable) throw read.untranslatable;
    sendJson(ctx, { input_tokens: estimateInputTokens(read.chat as { messages: unknown[]; tools?: unknown }) });
  };
}
