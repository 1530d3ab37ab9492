/**
 * The API description of the inference routes (docs/openapi.md). They are dispatched by an exact
 * path lookup outside the Koa app (gateway/server.ts) and parse their bodies by hand, not with
 * zod (the hot path), so their bodies are described in words with a pointer to the surface's doc.
 */
import type { RouteDoc } from '../../lib/http/route-docs';

/** What every inference route may answer besides 200 and the access errors. */
const INFERENCE_STATUSES = [404, 405, 413, 429, 502, 503, 504] as const;

const SURFACES: ReadonlyArray<{ suffix: string; summary: string; body: string }> = [
  { suffix: '/v1/chat/completions', summary: 'Chat completion (OpenAI chat completions; `stream: true` answers server-sent events).', body: 'An OpenAI chat completions request (docs/inference-surfaces.md).' },
  { suffix: '/v1/completions', summary: 'Text completion (OpenAI legacy completions, served through the chat path).', body: 'An OpenAI completions request (docs/inference-surfaces.md).' },
  { suffix: '/v1/responses', summary: 'Responses API request (OpenAI responses; `stream: true` answers server-sent events).', body: 'An OpenAI responses request (docs/inference-surfaces.md).' },
  { suffix: '/v1/embeddings', summary: 'Embeddings (OpenAI embeddings).', body: 'An OpenAI embeddings request (docs/inference-surfaces.md).' },
  { suffix: '/v1/messages/count_tokens', summary: 'Token count of a messages request (messages API).', body: 'A messages API request (docs/inference-surfaces.md).' },
  { suffix: '/v1/messages', summary: 'Message (messages API; `stream: true` answers server-sent events; errors are messages-shaped).', body: 'A messages API request (docs/inference-surfaces.md).' },
];

/** The description of the inference route at `path`; `xApiKey` when the key may come as `X-Api-Key`. */
export function inferenceRouteDoc(path: string, route: { xApiKey?: boolean }): RouteDoc {
  const surface = SURFACES.find((s) => path.endsWith(s.suffix));
  return {
    summary: surface?.summary ?? 'Inference request.',
    bodyText: surface?.body ?? 'An inference request (docs/inference-surfaces.md).',
    statuses: INFERENCE_STATUSES,
    ...(route.xApiKey ? { xApiKey: true } : {}),
  };
}
