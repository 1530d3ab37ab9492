/**
 * Upstream request headers: JSON content type, bearer auth when a key is present, and the
 * profile's own extra headers (which cannot replace the first two). Message-format kinds send their
 * dialect's headers instead (`message-format.ts`).
 */
import type { AdapterProfile, HeaderOptions } from './kinds';
import { messagesHeaders } from './message-format';

/** The headers of an upstream request for a profile, with an optional API key. */
export function upstreamHeaders(
  key: string | undefined,
  adapter: AdapterProfile,
  options: HeaderOptions = {},
): Record<string, string> {
  if (adapter.messages !== undefined) return messagesHeaders(key, adapter, adapter.messages, options);
  const extra = adapter.extraHeaders?.(options);
  const headers: Record<string, string> = extra === undefined ? {} : { ...extra };
  headers['content-type'] = 'application/json';
  if (key !== undefined && key !== '') headers.Authorization = `Bearer ${key}`;
  return headers;
}
