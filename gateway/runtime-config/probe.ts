/**
 * Verification probes for admin "verify" endpoints: try an upstream without saving anything.
 * Either `GET <base>/models` (provider and key checks) or a one-token completion in the kind's
 * wire format (route and model checks: chat completions, a Responses-API call for `upstream_api:
 * responses` routes, or a messages call for message-format kinds). The key is sent to the upstream only; results never contain it.
 */
import { request } from 'undici';
import { chatUrlFor, messagesUrlsFor, modelsListUrl, resolveAdapterKind, responsesUrlFor, upstreamHeaders, type AdapterProfile } from '../adapters';

export interface ProbeTarget {
  kind: string;
  baseUrl: string;
  apiKey: string | undefined;
  /** With a model: a tiny chat completion; without: `GET /models`. */
  providerModelId?: string;
  /** `responses`: the model probe is a tiny Responses-API call (routes with `upstream_api: responses`). */
  upstreamApi?: 'chat_completions' | 'responses';
}

export interface ProbeResult {
  ok: boolean;
  /** `models` or `chat`. */
  probe: 'models' | 'chat';
  url: string;
  status: number | null;
  latency_ms: number;
  /** Why it failed (status text or transport error), never the credential. */
  error?: string;
}

const TIMEOUT_MS = 5000;

/** The URL of a probe: the chat path (or a message-format kind's messages path), or the upstream's model listing. */
export function probeUrl(target: ProbeTarget): string | undefined {
  const adapter = resolveAdapterKind(target.kind);
  if (!target.providerModelId) return modelsListUrl(adapter, target.baseUrl);
  if (adapter.messages !== undefined) return messagesUrlsFor(adapter.messages, target.baseUrl, target.providerModelId).create;
  if (target.upstreamApi === 'responses') return responsesUrlFor(adapter, target.baseUrl);
  return chatUrlFor(adapter, target.baseUrl);
}

/** The body of a one-token completion in the kind's own wire format. */
function probeBody(adapter: AdapterProfile, providerModelId: string, upstreamApi: ProbeTarget['upstreamApi']): string {
  if (upstreamApi === 'responses' && adapter.messages === undefined) return JSON.stringify({ model: providerModelId, input: 'ping', max_output_tokens: 16, stream: false, store: false });
  const messages = [{ role: 'user', content: 'ping' }];
  if (adapter.messages === undefined) return JSON.stringify({ model: providerModelId, messages, max_tokens: 1, stream: false });
  const dialect = adapter.messages;
  return JSON.stringify({
    ...(dialect.path === 'raw_predict' ? {} : { model: providerModelId }),
    ...(dialect.version.in === 'body' ? { anthropic_version: dialect.version.value } : {}),
    messages, max_tokens: 1,
  });
}

/** Runs one probe; never throws for upstream failures. */
export async function probeUpstream(target: ProbeTarget): Promise<ProbeResult> {
  const adapter = resolveAdapterKind(target.kind);
  const probe = target.providerModelId ? 'chat' : 'models';
  const url = probeUrl(target);
  if (url === undefined) {
    return { ok: false, probe, url: target.baseUrl, status: null, latency_ms: 0, error: `adapter kind ${target.kind} lists no models: verify with a model` };
  }
  const headers = upstreamHeaders(target.apiKey, adapter, {});
  const body = target.providerModelId ? probeBody(adapter, target.providerModelId, target.upstreamApi) : undefined;
  const started = Date.now();
  try {
    const response = await request(url, {
      method: body ? 'POST' : 'GET', headers, ...(body ? { body } : {}),
      headersTimeout: TIMEOUT_MS, bodyTimeout: TIMEOUT_MS, signal: AbortSignal.timeout(TIMEOUT_MS * 2),
    });
    const text = await response.body.text();
    const ok = response.statusCode >= 200 && response.statusCode < 300;
    return {
      ok, probe, url, status: response.statusCode, latency_ms: Date.now() - started,
      ...(ok ? {} : { error: `upstream answered ${response.statusCode}: ${text.slice(0, 200)}` }),
    };
  } catch (err) {
    return { ok: false, probe, url, status: null, latency_ms: Date.now() - started, error: (err as Error).message };
  }
}
