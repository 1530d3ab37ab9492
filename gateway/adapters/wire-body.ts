/**
 * Building the JSON bodies sent upstream ("wire bodies") from a client request and a route.
 * Hot path: one pass over the client's keys into one new object; the client object is never mutated.
 */
import { buildMessagesBody } from '../translate/messages-upstream/request';
import { type AdapterKindRegistry, type AdapterProfile, assertEmbeddingsBuildable, defaultAdapterKindRegistry } from './kinds';
import { checkedReasoningEffort, clampTokens } from './params';

/** The route fields the wire layer reads. */
export interface WireRoute {
  readonly kind: string;
  /** Sent upstream as `model`. */
  readonly providerModelId: string;
  /** Upper bound for `max_tokens` / `max_completion_tokens`. */
  readonly maxOutputLength: number;
  /** Optional client parameters forwarded upstream; default {@link DEFAULT_SUPPORTED_PARAMS}. */
  readonly supportedParams?: readonly string[] | undefined;
  /** Accepted `reasoning_effort` values (only when `reasoning_effort` is supported). */
  readonly reasoningEfforts?: readonly string[] | undefined;
  readonly supportsTools: boolean;
  /** `supports_structured_output`: the route gets the client's `response_format` as sent. */
  readonly supportsStructuredOutput?: boolean | undefined;
  /** Operator-set fields merged under core fields and client parameters. */
  readonly extraBody?: Readonly<Record<string, unknown>> | undefined;
  readonly priorityScheduling: boolean;
}

/** The scheduling tier of a request on `priority_scheduling` routes. */
export type PriorityTier = 'interactive' | 'large' | 'elephant';

/** The `priority` stamped on the wire per tier. */
export const PRIORITY_BY_TIER: Readonly<Record<PriorityTier, number>> = Object.freeze({
  interactive: 20,
  large: 15,
  elephant: 0,
});

/** Optional parameters forwarded when a route does not list its own. */
export const DEFAULT_SUPPORTED_PARAMS: readonly string[] = Object.freeze(['temperature', 'top_p', 'max_tokens']);

/** Per-request options of {@link buildChatBody}. */
export interface ChatBodyOptions {
  readonly stream: boolean;
  readonly tier: PriorityTier;
  /** Registry the route's kind is resolved in; default: the shared one. */
  readonly registry?: AdapterKindRegistry | undefined;
}

function resolveAdapter(kind: string, registry: AdapterKindRegistry | undefined): AdapterProfile {
  return (registry ?? defaultAdapterKindRegistry).resolve(kind);
}

/** Copies one client field onto the body if the route lets it through; unlisted parameters are dropped. */
function forwardClientField(
  body: Record<string, unknown>,
  key: string,
  value: unknown,
  route: WireRoute,
  supported: readonly string[],
): void {
  switch (key) {
    case 'model':
    case 'stream':
    case 'stream_options':
    case 'priority':
      return; // set by the gateway, or (priority) never taken from the client
    case 'messages':
      body.messages = value;
      return;
    case 'tools':
    case 'tool_choice':
      if (route.supportsTools) body[key] = value;
      return;
    case 'response_format':
      // Structured-output requests reach only supporting routes (surfaces/chat.ts); `text` elsewhere
      // still follows `supported_params`.
      if (route.supportsStructuredOutput === true || supported.includes(key)) body.response_format = value;
      return;
    case 'reasoning_effort':
      if (value !== null) body.reasoning_effort = checkedReasoningEffort(value, route.reasoningEfforts, supported);
      return;
    case 'max_tokens':
    case 'max_completion_tokens':
      if (supported.includes(key)) body[key] = clampTokens(key, value, route.maxOutputLength);
      return;
    default:
      if (supported.includes(key)) body[key] = value;
  }
}

/**
 * The upstream chat-completions body: `extra_body` first, then validated client fields, then the
 * core fields (`model`, `stream`, `stream_options`, `priority`, aggregator pin), each overwriting
 * what came before. Throws `AppError` 400 for a rejected `reasoning_effort` or a non-numeric token
 * limit, `UnknownAdapterKindError` for unknown kinds. A message-format kind gets the client's
 * request translated into its messages-API body instead (`translate/messages-upstream/request.ts`).
 */
export function buildChatBody(
  route: WireRoute,
  client: Readonly<Record<string, unknown>>,
  options: ChatBodyOptions,
): Record<string, unknown> {
  const adapter = resolveAdapter(route.kind, options.registry);
  if (adapter.messages !== undefined) return buildMessagesBody(route, client, options.stream, adapter.messages);
  const body: Record<string, unknown> = route.extraBody === undefined ? {} : { ...route.extraBody };
  const supported = route.supportedParams ?? DEFAULT_SUPPORTED_PARAMS;
  for (const key of Object.keys(client)) {
    const value = client[key];
    if (value !== undefined) forwardClientField(body, key, value, route, supported);
  }
  body.model = route.providerModelId;
  body.stream = options.stream;
  if (options.stream) body.stream_options = { include_usage: true };
  else if ('stream_options' in body) delete body.stream_options;
  if (route.priorityScheduling) body.priority = PRIORITY_BY_TIER[options.tier];
  if (adapter.pinnedProvider !== undefined) {
    body.provider = { order: [adapter.pinnedProvider], allow_fallbacks: false };
  }
  return body;
}

/**
 * The upstream embeddings body: `{model, input}` plus `encoding_format` / `dimensions` when the
 * client gave them. Throws 501 for message-format kinds (no embeddings), `UnknownAdapterKindError` for unknown kinds.
 */
export function buildEmbeddingsBody(
  route: WireRoute,
  client: Readonly<Record<string, unknown>>,
  registry?: AdapterKindRegistry,
): Record<string, unknown> {
  assertEmbeddingsBuildable(resolveAdapter(route.kind, registry));
  const body: Record<string, unknown> = { model: route.providerModelId, input: client.input };
  if (client.encoding_format !== undefined) body.encoding_format = client.encoding_format;
  if (client.dimensions !== undefined) body.dimensions = client.dimensions;
  return body;
}
