/**
 * The messages surface on a route of a message-format kind (docs/adapters.md "Messages surface on
 * a message-format route"): both sides speak the messages API, so the client's body goes upstream
 * as sent — `system` blocks and `cache_control`, system turns inside `messages`, `thinking` with
 * its signed blocks, `context_management`, `output_config`, every tool and its extra fields,
 * `metadata` — and the upstream's message comes back as sent. The gateway sets only what it owns:
 * `model` (the route's `provider_model_id`, or none plus `anthropic_version` for the cloud
 * variant), `stream`, and `max_tokens` clamped to `max_output_length` (a `thinking` budget then
 * kept below it). `extra_body` goes under the client's fields, as on chat. Pure code.
 */
import type { MessagesDialect } from '../../adapters/kinds';
import { clampTokens } from '../../adapters/params';
import type { WireRoute } from '../../adapters/wire-body';
import { chatUsageOf, type ChatUsage } from './response';

type Json = Record<string, unknown>;

/** The smallest `thinking.budget_tokens` a messages API takes. */
const MIN_THINKING_BUDGET = 1024;

/** Client fields the gateway sets itself. */
const OWNED = new Set(['model', 'stream', 'max_tokens', 'anthropic_version']);

/** The upstream body of a messages-surface request on a message-format route. */
export function passthroughBody(route: WireRoute, client: Readonly<Json>, stream: boolean, dialect: MessagesDialect): Json {
  const body: Json = route.extraBody === undefined ? {} : { ...route.extraBody };
  for (const key of Object.keys(client)) {
    if (OWNED.has(key)) continue;
    if ((key === 'tools' || key === 'tool_choice') && !route.supportsTools) continue;
    body[key] = client[key];
  }
  const max = client.max_tokens === undefined ? route.maxOutputLength : clampTokens('max_tokens', client.max_tokens, route.maxOutputLength) as number;
  body.max_tokens = max;
  fitThinking(body, max);
  if (dialect.path === 'raw_predict') delete body.model;
  else body.model = route.providerModelId;
  if (dialect.version.in === 'body') body.anthropic_version = dialect.version.value;
  body.stream = stream;
  return body;
}

/**
 * A `thinking: {type: enabled, budget_tokens}` budget at or above `max_tokens` (after clamping) is
 * lowered to `max_tokens - 1`; below the 1024 minimum, thinking is left out (the API would refuse
 * either). `adaptive` and `disabled` carry no budget and pass.
 */
function fitThinking(body: Json, max: number): void {
  const thinking = body.thinking as { type?: unknown; budget_tokens?: unknown } | null | undefined;
  if (thinking === null || typeof thinking !== 'object' || thinking.type !== 'enabled' || typeof thinking.budget_tokens !== 'number') return;
  if (thinking.budget_tokens < max) return;
  if (max - 1 < MIN_THINKING_BUDGET) delete body.thinking;
  else body.thinking = { ...thinking, budget_tokens: max - 1 };
}

/**
 * The upstream's message for the client: as sent, with `model` the name the client asked for (as
 * on chat routes: the provider's model id is not shown), and its usage in chat terms for the
 * request log and billing.
 */
export function passthroughMessage(upstream: unknown, clientModel: string): { body: unknown; usage: ChatUsage | undefined } {
  if (upstream === null || typeof upstream !== 'object' || Array.isArray(upstream)) return { body: upstream, usage: undefined };
  const message = upstream as Json;
  const usage = message.usage !== null && typeof message.usage === 'object' ? chatUsageOf(message.usage) : undefined;
  return { body: 'model' in message ? { ...message, model: clientModel } : message, usage };
}
