/**
 * Upstream request headers: JSON content type, bearer auth when a key is present, and the
 * profile's own extra headers (which cannot replace the first two).
 */
import type { AdapterProfile, HeaderOptions } from './kinds';

/** The headers of an upstream request for a profile, with an optional API key. */
export function upstreamHeaders(
  key: string | undefined,
  adapter: AdapterProfile,
  options: HeaderOptions = {},
): Record<string, string> {
  const extra = adapter.extraHeaders?.(options);
  const headers: Record<string, string> = extra === undefined ? {} : { ...extra };
  headers['content-type'] = 'application/json';
  if (key !== undefined && key !== '') headers.Authorization = `Bearer ${key}`;
  return headers;
}
