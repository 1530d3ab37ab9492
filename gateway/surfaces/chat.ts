/**
 * `POST /v1/chat/completions`, streaming and not: resolve the model, order its routes
 * (weighted, or the `X-Route-Pin` route alone), and try them through the fallback driver. A stream
 * commits to a route only when its first upstream chunk arrives, so failures before that still
 * fall back. A model with an offload policy in force keeps its offload route out of rotation and
 * waits on its local routes as `chat-offload.ts` says. `_routing` attribution is kept in request
 * state for logs, never sent.
 */
import type { ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { AppError } from '../../lib/errors';
import { abortOnClientClose, type ClientAbort } from '../../lib/http/client-abort';
import type { Logger } from '../../lib/logger';
import { readJsonBody } from '../../lib/http/json-body';
import { buildChatBody, type PriorityTier } from '../adapters';
import { assertGrantAllows, callerOf } from '../auth/caller';
import { affinityKey } from '../../lib/client-address/ip-routability';
import { processCompletion } from '../processors';
import { noteChatFacts } from '../request-log/chat-facts';
import type { ChatCompletion } from '../processors/types';
import type { Model, Route } from '../registry';
import type { Role } from '../registry/types';
import { runWithFallback, type FallbackOptions } from '../routing/fallback';
import { keepRoutes } from '../routing/keep-routes';
import { carriesMedia, routesAccepting } from '../routing/modalities';
import type { OffloadAttribution } from '../routing/offload';
import { estimatePromptTokens, priorityTier } from '../routing/prompt-estimate';
import type { RoutingTicket } from '../routing/selector';
import type { Admission, UpstreamStream } from '../upstream/client';
import type { FailedAttempt, UpstreamError } from '../upstream/upstream-error';
import { localCompletion, localStream, offloadPlan } from './chat-offload';
import { relayChatStream, type StreamOutcome, type StreamShape } from './chat-stream';
import { assertLoggableText, FORWARDED_TEXT, parseChatRequest, type ChatRequest } from './chat-request';
import type { RequestRecord, RoutingAttribution } from './request-record';
import { attribute, sendJson, type GatewayContextDeps, type InferenceContext, type InferenceHandler } from './state';
import { finishCompletionUsage, type Usage } from './usage';

/**
 * Routes for one request and the ticket that hears its attempts: the `X-Route-Pin` route alone,
 * or the routing core's order (affinity pin, strategy, prefill-aware choice; docs/routing.md).
 */
export function candidatesFor(model: Model, pin: string | undefined, deps: Pick<GatewayContextDeps, 'routing'>, request: { state: RequestRecord; promptTokens: number }): { ticket: RoutingTicket; pinned: boolean } {
  const synthetic = request.state.synthetic;
  if (!pin) {
    const callerKey = affinityKey({ apiKeyHash: apiKeyRef(request.state), grantId: request.state.caller?.grantId, clientIp: request.state.client });
    return { ticket: deps.routing.plan(model, { callerKey, promptTokens: request.promptTokens, synthetic }), pinned: false };
  }
  const route = model.routes.find((r) => r.endpointId === pin || r.providerLabel === pin);
  if (!route) throw new AppError('invalid_request', `ProviderPinError: X-Route-Pin '${pin}' matches no route of model ${model.id}`, { param: 'X-Route-Pin' });
  return { ticket: deps.routing.fixedOrder([route], synthetic), pinned: true };
}

/** The API key's affinity identity (its id; never the secret). */
function apiKeyRef(state: RequestRecord): string | undefined {
  const id = state.caller?.apiKeyId;
  return id === undefined ? undefined : `key:${id}`;
}

/** `X-Route-Pin`: an admin debugging aid; other roles get 403. */
function routePin(ctx: InferenceContext, role: Role): string | undefined {
  const pin = ctx.header('x-route-pin');
  if (pin !== undefined && role !== 'admin') throw new AppError('forbidden', 'X-Route-Pin is an administrator debugging aid', { param: 'X-Route-Pin' });
  return pin;
}

function tierFor(model: Model, promptTokens: number, deps: GatewayContextDeps): PriorityTier {
  if (!model.routes.some((r) => r.priorityScheduling)) return 'interactive';
  return priorityTier(promptTokens, deps.tiers);
}

function attribution(route: Route, failed: readonly FailedAttempt[], offload: OffloadAttribution | undefined): RoutingAttribution {
  return {
    provider: route.providerLabel, base_url: route.baseUrl, endpoint_id: route.endpointId,
    ...(failed.length > 0 ? { fallback: true, failed_attempts: [...failed] } : {}),
    ...(offload ? { offload } : {}),
  };
}

/** How a surface built on the chat path presents results (absent: chat completions as they are). */
export interface SurfaceShape {
  completion(body: ChatCompletion & { usage?: Usage }): unknown;
  stream(): StreamShape;
  /**
   * `true`: the surface picks one adapter (the messages surface): the routing order still
   * chooses it (affinity, weights, breakers skipping open circuits), but the first route tried is
   * the only attempt: its failure is the client's error, never retried on another route.
   */
  oneAttempt?: boolean;
  /** The client body for one route's wire body (absent: the parsed body as it is), e.g. a parameter only some routes accept. */
  bodyFor?: (route: Route, body: Record<string, unknown>) => Record<string, unknown>;
  /** Routes that speak the surface's own wire format and get its request as sent (absent: none). */
  native?: NativeRoutes;
  /**
   * The request has no chat translation (a 400 naming the field): raised when a route that needs
   * one is to serve it, so a {@link native} route still can.
   */
  untranslatable?: AppError | undefined;
  /** Hears the failed attempts when no route answered (the admin playground shows them). */
  failed?: (attempts: readonly FailedAttempt[]) => void;
}

/**
 * A surface's pass-through (docs/adapters.md): the messages surface on message-format routes, the
 * responses surface on `upstream_api: responses` routes. For a route it {@link serves}, the
 * upstream call (`surface`) carries {@link body} and {@link headers} and its answer goes back as the
 * upstream sent it, through {@link completion} or {@link relayStream}.
 */
export interface NativeRoutes {
  serves(route: Route): boolean;
  /** The upstream call's surface. */
  surface: 'messages' | 'responses';
  /** The upstream body for `route`. */
  body(route: Route, stream: boolean): string;
  /** Sent upstream besides the route's own headers. */
  headers: Readonly<Record<string, string>> | undefined;
  /** The client's answer and its usage (chat terms, for the request log) from the upstream's JSON. */
  completion(upstream: unknown, route: Route): { body: unknown; usage: Usage | undefined };
  /** Relays the opened upstream stream to the client (headers not sent yet). */
  relayStream(res: ServerResponse, route: Route, opened: UpstreamStream, signal: ClientAbort, state: { readonly log: Logger }): Promise<StreamOutcome>;
}

/** The routes a surface can use: chat-completions routes, and those speaking the surface's own API. */
function servableRoutes(routes: readonly Route[], model: Model, shape: SurfaceShape | undefined): readonly Route[] {
  if (routes.every((r) => r.upstreamApi === 'chat_completions')) return routes;
  return keepRoutes(routes, (r) => r.upstreamApi === 'chat_completions' || shape?.native?.serves(r) === true, () => new AppError('invalid_request',
    `Model ${model.id} is served only through /v1/${routes[0]!.upstreamApi}`, { param: 'model' }));
}

/**
 * Structured output (docs/inference-surfaces.md "Structured output"): only routes declaring
 * `supports_structured_output` serve it; a model with none is a 400 naming the model and the field.
 */
function assertStructuredOutput(model: Model, field: string): void {
  if (model.routes.some((r) => r.supportsStructuredOutput)) return;
  throw new AppError('invalid_request', `Model ${model.id} does not support structured output ('${field}'): none of its routes declares supports_structured_output`, { param: field });
}

/** The routes of this request's order that serve structured output; none left is the same 400. */
function structuredRoutes(routes: readonly Route[], model: Model, field: string): readonly Route[] {
  return keepRoutes(routes, (r) => r.supportsStructuredOutput, () => new AppError('invalid_request',
    `Model ${model.id} has no route available here that supports structured output ('${field}')`, { param: field }));
}

/**
 * Runs a chat request for any surface on the chat path: model resolution, route order, fallback,
 * streaming relay or one completion; errors become client errors.
 */
export async function serveChat(ctx: InferenceContext, deps: GatewayContextDeps, request: ChatRequest, role: Role, shape?: SurfaceShape): Promise<void> {
  const state = ctx.state;
  state.model = request.model; // the row records the name asked for (cleaned when built), even when refused
  assertLoggableText('model', request.model);
  state.stream = request.stream;
  noteChatFacts(state, request.messages);
  const model = deps.registry.resolve(request.model, role, 'chat');
  state.model = model.id;
  const structured = request.structuredOutput;
  if (structured !== undefined) assertStructuredOutput(model, structured);
  const caller = callerOf(state);
  assertGrantAllows(caller, model.id);
  deps.limits.enter(caller, model.id, ctx.res);
  const promptTokens = deps.routing.prefill.enabled || model.routes.some((r) => r.priorityScheduling) ? estimatePromptTokens(request.messages) : 0;
  const { ticket, pinned } = candidatesFor(model, routePin(ctx, role), deps, { state, promptTokens });
  // Models without an offload policy pay one map lookup here; a pinned request is never offloaded.
  const offload = pinned ? undefined : offloadPlan(deps, model, ticket, request, promptTokens, state);
  const servable = servableRoutes(offload?.routes ?? ticket.routes, model, shape);
  const shaped = structured === undefined ? servable : structuredRoutes(servable, model, structured);
  // Images or audio: only routes whose model accepts them (docs/routing.md "Input modalities").
  const routes = carriesMedia(state) ? routesAccepting(shaped, model.id, state) : shaped;
  const run = offload?.run;
  const tier = tierFor(model, promptTokens, deps);
  const signal = abortOnClientClose(ctx.res);
  const native = shape?.native;
  const isNative = (route: Route): boolean => native !== undefined && native.serves(route);
  const wire = (route: Route): string => {
    if (shape?.untranslatable) throw shape.untranslatable;
    return JSON.stringify(buildChatBody(route, shape?.bodyFor ? shape.bodyFor(route, request.body) : request.body, { stream: request.stream, tier }));
  };
  const open = (route: Route, attempt: ClientAbort, admission?: Admission): Promise<UpstreamStream> => (isNative(route)
    ? deps.upstream.openStream(route, native!.body(route, true), attempt, admission, { surface: native!.surface, headers: native!.headers })
    : deps.upstream.openStream(route, wire(route), attempt, admission));
  const post = (route: Route): Promise<unknown> => (isNative(route)
    ? deps.upstream.postJson<unknown>(route, native!.surface, native!.body(route, false), signal, undefined, native!.headers)
    : deps.upstream.postJson<ChatCompletion>(route, 'chat', wire(route), signal));
  const fallbackOptions: FallbackOptions = {
    modelId: model.id, state: ctx.state, pinned: pinned || shape?.oneAttempt === true, observer: ticket, offload: run,
    onUpstreamAuthFailure: (route: Route, err: UpstreamError) => ctx.state.log.warn(
      { event: 'upstream_auth_misconfig', model: model.id, endpoint_id: route.endpointId, provider: route.providerLabel, status: err.options.upstreamStatus },
      `upstream_auth_misconfig: ${route.providerLabel} rejected the gateway's credential for model ${model.id}`,
    ),
  };
  const heard = shape?.failed;
  if (run || heard) {
    // A request that was offloaded and still failed keeps its offload attribution for the request
    // log (the offload route named, `offload_endpoint_id` set): the offloads report counts it.
    fallbackOptions.onFailure = (failed) => {
      if (run?.attribution) state.routing = attribution(run.route, [], run.attribution);
      heard?.(failed);
    };
  }
  if (request.stream) {
    const opened = await runWithFallback(routes, deps.routewise.tracked(model, ctx, (route) => (run && route !== run.route
      ? localStream(deps, run, route, signal, (attempt, admission) => open(route, attempt, admission))
      : open(route, signal))), fallbackOptions);
    if (state.startedAt !== undefined) state.firstTokenMs = performance.now() - state.startedAt;
    attribute(ctx, attribution(opened.route, opened.failedAttempts, run?.attribution));
    state.pricing = opened.route.pricing;
    const outcome = isNative(opened.route)
      ? await native!.relayStream(ctx.res, opened.route, opened.value, signal, state)
      : await relayChatStream(ctx.res, opened.route, opened.value, signal, state, shape?.stream());
    state.usage = outcome.usage;
    if (!outcome.completed) state.errorCode = outcome.error === 'client_disconnected' ? outcome.error : 'upstream_stream_failed';
    return;
  }
  // A messages-API route is never offloaded when not streaming (docs/adapters.md); a Responses-API route is.
  const done = await runWithFallback(routes, deps.routewise.tracked(model, ctx, (route) => (run && route !== run.route && (!isNative(route) || native!.surface === 'responses')
    ? localCompletion(deps, run, route, isNative(route) ? native!.body(route, false) : wire(route), signal, isNative(route) ? 'responses' : 'chat')
    : post(route))), fallbackOptions);
  if (isNative(done.route)) {
    const answer = native!.completion(done.value, done.route);
    finishCompletionUsage(answer.usage, done.route);
    attribute(ctx, attribution(done.route, done.failedAttempts, run?.attribution));
    state.pricing = done.route.pricing;
    state.usage = answer.usage;
    sendJson(ctx, answer.body);
    return;
  }
  const completion = processCompletion(done.route.processor, done.value as ChatCompletion) as ChatCompletion & { _routing?: unknown; usage?: Usage };
  delete completion._routing;
  finishCompletionUsage(completion.usage, done.route);
  attribute(ctx, attribution(done.route, done.failedAttempts, run?.attribution));
  state.pricing = done.route.pricing;
  state.usage = completion.usage;
  sendJson(ctx, shape ? shape.completion(completion) : completion);
}

/** `POST /v1/chat/completions`. */
export function chatHandler(deps: GatewayContextDeps): InferenceHandler {
  return async (ctx) => {
    const caller = callerOf(ctx.state);
    const request = parseChatRequest(await readJsonBody(ctx.req, deps.maxBodyBytes, FORWARDED_TEXT));
    await serveChat(ctx, deps, request, caller.role);
  };
}
