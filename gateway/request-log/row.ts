/**
 * Turns a queued {@link RequestRecord} into an `api_logs` row (the one place a record becomes a row): surface name, caller, tokens, cost,
 * the user-message shape and the metadata JSON. Runs at flush time (off the request path).
 * Secrets never reach a row: the caller is named by ids only, headers other than `User-Agent`
 * and `X-Session-Id` are not read.
 */
import { randomUUID } from 'node:crypto';
import { declaredAgent } from './client-agent';
import { cachedPromptTokens, costOf } from './cost';
import type { RequestRecord } from '../surfaces/request-record';
import { messageShape, messageText } from './message-shape';

/** An `api_logs` row as inserted (column names). */
export interface ApiLogRow {
  log_id: string;
  created_at: string;
  request_id: string;
  user_id: number | null;
  api_key_id: number | null;
  model: string | null;
  provider: string | null;
  endpoint_id: string | null;
  surface: string;
  status: number;
  stream: boolean;
  latency_ms: number;
  first_token_ms: number | null;
  prompt_tokens: number | null;
  completion_tokens: number | null;
  cache_read_tokens: number | null;
  num_user_turns: number | null;
  num_tool_calls: number | null;
  cost_usd: number | null;
  error_code: string | null;
  synthetic: boolean;
  user_message_chars: number | null;
  user_message_entropy: number | null;
  user_message_hash: string | null;
  /** The newest user message's stripped text, cut to {@link MESSAGE_TEXT_LIMIT}; only with `DB_STORE_FULL_CONTENT=true`. */
  user_message_text: string | null;
  metadata: Record<string, unknown>;
}

/** UTF-16 units of the user message kept by `DB_STORE_FULL_CONTENT` (the language section needs no more). */
export const MESSAGE_TEXT_LIMIT = 4000;

/** What a row keeps beyond the always-logged facts. */
export interface RowOptions {
  /** `DB_STORE_FULL_CONTENT`: keep the newest user message's text. */
  storeMessageText?: boolean | undefined;
}

const FIELD_LIMIT = 256;

function tokens(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? Math.round(value) : null;
}

function cut(value: string | undefined): string | undefined {
  return value === undefined ? undefined : value.slice(0, FIELD_LIMIT);
}

function metadataOf(entry: RequestRecord): Record<string, unknown> {
  const meta: Record<string, unknown> = {};
  const agent = declaredAgent(entry.userAgent);
  if (agent) meta.agent = agent;
  if (entry.userAgent) meta.user_agent = cut(entry.userAgent);
  if (entry.sessionId) meta.session_id = cut(entry.sessionId);
  if (entry.client) {
    const { client_ip, peer_ip, source, resolved, reason } = entry.client;
    meta.client = reason === null ? { client_ip, peer_ip, source, resolved } : { client_ip, peer_ip, source, resolved, reason };
  }
  if (entry.routing) meta.routing = entry.routing;
  if (entry.caller) meta.via = entry.caller.via;
  if (entry.caller?.grantId) meta.grant_id = entry.caller.grantId;
  if (entry.synthetic) meta.synthetic = true;
  if (entry.rejection) {
    meta.rejection = entry.rejection.reason;
    if (entry.rejection.credentialState) meta.credential_state = entry.rejection.credentialState;
  }
  return meta;
}

/** The stripped text of the newest user message, cut; null when there is none or it is blank. */
function storedText(entry: RequestRecord): string | null {
  const text = entry.lastUserMessage === undefined ? undefined : messageText(entry.lastUserMessage)?.trim();
  return text ? text.slice(0, MESSAGE_TEXT_LIMIT) : null;
}

/** The row of one request's record; `newId` gives its idempotency key (a random UUID by default). */
export function toApiLogRow(entry: RequestRecord, newId: () => string = randomUUID, options: RowOptions = {}): ApiLogRow {
  const usage = entry.usage;
  const shape = entry.lastUserMessage === undefined ? undefined : messageShape(entry.lastUserMessage);
  const answered = entry.routing !== undefined;
  const cached = usage ? cachedPromptTokens(usage) : undefined;
  const reportedCache = usage && (typeof usage.cache_read_tokens === 'number' || typeof usage.cached_tokens === 'number'
    || typeof usage.prompt_tokens_details?.cached_tokens === 'number');
  return {
    log_id: newId(),
    created_at: new Date(entry.at).toISOString(),
    request_id: entry.requestId,
    user_id: entry.caller?.userId ?? null,
    api_key_id: entry.caller?.apiKeyId ?? null,
    model: entry.model ?? null,
    provider: entry.routing?.provider ?? null,
    endpoint_id: entry.routing?.endpoint_id ?? null,
    surface: entry.surface,
    status: entry.status,
    stream: entry.stream,
    latency_ms: Math.round(entry.latencyMs),
    first_token_ms: entry.firstTokenMs === undefined ? null : Math.round(entry.firstTokenMs),
    prompt_tokens: tokens(usage?.prompt_tokens),
    completion_tokens: tokens(usage?.completion_tokens),
    cache_read_tokens: reportedCache ? tokens(cached) : null,
    num_user_turns: entry.numUserTurns ?? null,
    num_tool_calls: entry.numToolCalls ?? null,
    cost_usd: answered ? costOf(entry.pricing, usage, entry) : null,
    error_code: entry.errorCode ?? null,
    synthetic: entry.synthetic,
    user_message_chars: shape?.chars ?? null,
    user_message_entropy: shape?.entropy ?? null,
    user_message_hash: shape?.hash ?? null,
    user_message_text: options.storeMessageText ? storedText(entry) : null,
    metadata: metadataOf(entry),
  };
}
