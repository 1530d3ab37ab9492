/**
 * The `count_tokens` seam for the messages surface: forwards a messages-API body's countable
 * fields to a message-format route's token-counting endpoint (`…/v1/messages/count_tokens`, or the
 * cloud variant's `models/count-tokens:rawPredict`) and returns `input_tokens`.
 */
import type { ClientAbort } from '../../../lib/http/client-abort';
import { resolveAdapterKind, type MessagesDialect } from '../../adapters';
import type { Route } from '../../registry';
import type { UpstreamClient } from '../../upstream/client';

/** The fields a token count reads; everything else of a messages body (max_tokens, stream, …) is left out. */
const COUNTED_FIELDS = ['system', 'messages', 'tools', 'tool_choice', 'thinking'] as const;

/** The token-count body of a messages-API body for a route: its countable fields, the route's model id, the body version when the dialect wants it. */
export function countTokensBody(route: Pick<Route, 'providerModelId'>, messagesBody: Readonly<Record<string, unknown>>, dialect: MessagesDialect): Record<string, unknown> {
  const body: Record<string, unknown> = { model: route.providerModelId };
  for (const field of COUNTED_FIELDS) if (messagesBody[field] !== undefined) body[field] = messagesBody[field];
  if (dialect.version.in === 'body') body.anthropic_version = dialect.version.value;
  return body;
}

/**
 * The route upstream's count of `messagesBody`'s input tokens, or `undefined` (nothing sent) when
 * the route is not of a message-format kind. `headers`: sent besides the route's own (the client's
 * `anthropic-beta`). Rejects with an `UpstreamError` as any upstream call does (and with a 502
 * one when the answer carries no `input_tokens`).
 */
export function countTokensUpstream(upstream: UpstreamClient, route: Route, messagesBody: Readonly<Record<string, unknown>>, signal: ClientAbort, headers?: Readonly<Record<string, string>>): Promise<number> | undefined {
  const dialect = resolveAdapterKind(route.kind).messages;
  if (dialect === undefined) return undefined;
  return upstream.countTokens(route, JSON.stringify(countTokensBody(route, messagesBody, dialect)), signal, headers);
}
