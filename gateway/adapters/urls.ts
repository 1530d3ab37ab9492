/**
 * Joining upstream URLs onto configured base URLs. Bases may or may not carry a version segment
 * and may end in any number of slashes; see docs/adapters.md for the table of rules.
 */
import { type AdapterKindRegistry, type AdapterProfile, defaultAdapterKindRegistry } from './kinds';

const SLASH = 0x2f;
const VERSION_SUFFIX = /\/v\d+$/;

/** The base URL without trailing slashes. */
export function trimTrailingSlashes(baseUrl: string): string {
  let end = baseUrl.length;
  while (end > 0 && baseUrl.charCodeAt(end - 1) === SLASH) end--;
  return end === baseUrl.length ? baseUrl : baseUrl.slice(0, end);
}

/** Whether a (trimmed) base URL ends in a version segment such as `/v1` or `/api/paas/v4`. */
export function endsWithVersionSegment(trimmedBase: string): boolean {
  return VERSION_SUFFIX.test(trimmedBase);
}

/** The chat-completions URL of a profile under a base URL. */
export function chatUrlFor(adapter: AdapterProfile, baseUrl: string): string {
  const base = trimTrailingSlashes(baseUrl);
  if (adapter.chatPathStyle === 'direct' || endsWithVersionSegment(base)) return `${base}/chat/completions`;
  return `${base}/v1/chat/completions`;
}

/**
 * The Responses-API URL of a compat profile under a base URL (routes with `upstream_api:
 * responses`): joined as the chat path is, `/responses` in place of `/chat/completions`.
 */
export function responsesUrlFor(adapter: AdapterProfile, baseUrl: string): string {
  const base = trimTrailingSlashes(baseUrl);
  if (adapter.chatPathStyle === 'direct' || endsWithVersionSegment(base)) return `${base}/responses`;
  return `${base}/v1/responses`;
}

/** The chat-completions URL of a kind under a base URL. Throws `UnknownAdapterKindError` for unknown kinds. */
export function chatCompletionsUrl(
  kind: string,
  baseUrl: string,
  registry: AdapterKindRegistry = defaultAdapterKindRegistry,
): string {
  return chatUrlFor(registry.resolve(kind), baseUrl);
}

/**
 * The embeddings URL. With a route `embeddings_path`: `<base>/<path>` (one leading slash of the
 * path is optional). Without: `<base>/embeddings` when the base ends in `/v1`, else `<base>/v1/embeddings`.
 * The path is validated elsewhere; this only joins.
 */
export function embeddingsUrl(baseUrl: string, embeddingsPath?: string | null): string {
  const base = trimTrailingSlashes(baseUrl);
  if (embeddingsPath !== undefined && embeddingsPath !== null && embeddingsPath !== '') {
    const path = embeddingsPath.charCodeAt(0) === SLASH ? embeddingsPath.slice(1) : embeddingsPath;
    return `${base}/${path}`;
  }
  return base.endsWith('/v1') ? `${base}/embeddings` : `${base}/v1/embeddings`;
}
