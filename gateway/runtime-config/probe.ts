/**
 * Verification probes for admin "verify" endpoints: try an upstream without saving anything.
 * Either `GET <base>/models` (provider and key checks) or a one-token chat completion (route and
 * model checks). The key is sent to the upstream only; results never contain it.
 */
import { request } from 'undici';
import { chatCompletionsUrl, resolveAdapterKind, upstreamHeaders } from '../adapters';

export interface ProbeTarget {
  kind: string;
  baseUrl: string;
  apiKey: string | undefined;
  /** With a model: a tiny chat completion; without: `GET /models`. */
  providerModelId?: string;
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

/** The URL of a probe: the chat path, or its sibling `/models`. */
export function probeUrl(target: ProbeTarget): string {
  const chat = chatCompletionsUrl(target.kind, target.baseUrl);
  return target.providerModelId ? chat : chat.replace(/\/chat\/completions$/, '/models');
}

/** Runs one probe; never throws for upstream failures. */
export async function probeUpstream(target: ProbeTarget): Promise<ProbeResult> {
  const url = probeUrl(target);
  const probe = target.providerModelId ? 'chat' : 'models';
  const headers = upstreamHeaders(target.apiKey, resolveAdapterKind(target.kind), {});
  const body = target.providerModelId
    ? JSON.stringify({ model: target.providerModelId, messages: [{ role: 'user', content: 'ping' }], max_tokens: 1, stream: false })
    : undefined;
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
