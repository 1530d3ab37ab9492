/**
 * Wire details of the message-format kinds (`vendor_h_direct`, `vendor_g_api`, `vendor_h_cloud`):
 * their URLs (messages, stream, token count) and request headers, per {@link MessagesDialect}.
 * The body translation lives in `gateway/translate/messages-upstream/`. Pure code.
 */
import type { AdapterProfile, HeaderOptions, MessagesDialect } from './kinds';
import { endsWithVersionSegment, trimTrailingSlashes } from './urls';

/** The URLs of one message-format route. */
export interface MessagesUrls {
  /** Non-streaming messages call. */
  readonly create: string;
  /** Streaming messages call (the same URL for `messages` dialects). */
  readonly stream: string;
  /** Token counting, or `undefined` when the dialect has none. */
  readonly countTokens: string | undefined;
}

/** A model id as one path segment (`@` kept: cloud model versions are spelled `name@date`). */
function modelSegment(providerModelId: string): string {
  return encodeURIComponent(providerModelId).replace(/%40/g, '@');
}

/**
 * The URLs of a message-format route. `messages` dialects: `<base>/messages` when the base ends
 * in a version segment, else `<base>/v1/messages`; token counting at `…/messages/count_tokens`.
 * `raw_predict`: `<base>/models/<model>:rawPredict`, `:streamRawPredict`, and
 * `<base>/models/count-tokens:rawPredict` (the model then goes in the body).
 */
export function messagesUrlsFor(dialect: MessagesDialect, baseUrl: string, providerModelId: string): MessagesUrls {
  const base = trimTrailingSlashes(baseUrl);
  if (dialect.path === 'raw_predict') {
    const model = `${base}/models/${modelSegment(providerModelId)}`;
    return { create: `${model}:rawPredict`, stream: `${model}:streamRawPredict`, countTokens: `${base}/models/count-tokens:rawPredict` };
  }
  const messages = endsWithVersionSegment(base) ? `${base}/messages` : `${base}/v1/messages`;
  return { create: messages, stream: messages, countTokens: `${messages}/count_tokens` };
}

/**
 * The headers of a messages-API request: the profile's extra headers, then `content-type`, the
 * key (`x-api-key` or `Authorization: Bearer`) and the `anthropic-version` header when the dialect
 * sends the version as a header (none of which an extra header can replace).
 */
export function messagesHeaders(key: string | undefined, adapter: AdapterProfile, dialect: MessagesDialect, options: HeaderOptions): Record<string, string> {
  const extra = adapter.extraHeaders?.(options);
  const headers: Record<string, string> = extra === undefined ? {} : { ...extra };
  headers['content-type'] = 'application/json';
  if (dialect.version.in === 'header') headers['anthropic-version'] = dialect.version.value;
  if (key !== undefined && key !== '') {
    if (dialect.auth === 'x-api-key') headers['x-api-key'] = key;
    else headers.Authorization = `Bearer ${key}`;
  }
  return headers;
}
