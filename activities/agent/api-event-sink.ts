/**
 * The host runner's {@link EventSink}: posts a driver's events to the control-plane API
 * (`POST /v1/agent/hosts/:hostId/attempts/:attemptId/events`) with the host credential. It numbers
 * events 0, 1, 2… itself, batches events emitted while a post is in flight (up to 100), and
 * resolves each `emit` once its event is stored. Transient failures (network, 5xx, 429) are
 * retried with backoff; the API dedupes by attempt and seq, so a retry never stores twice. A 409
 * means the attempt is no longer current: {@link AttemptFencedError} is thrown (then and for every
 * later emit) so the driver stops.
 */
import type { AgentEventType, EventSink } from './types';

/** The attempt was finished, replaced or is not this host's: its events are refused. */
export class AttemptFencedError extends Error {
  constructor(readonly attemptId: string) {
    super(`Attempt ${attemptId} is not current; its events are refused`);
    this.name = 'AttemptFencedError';
  }
}

/** A refusal a retry cannot fix (4xx other than 409 and 429). */
export class EventRejectedError extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
    this.name = 'EventRejectedError';
  }
}

export interface ApiEventSinkOptions {
  /** Control-plane API base URL, e.g. `http://127.0.0.1:8081`. */
  apiUrl: string;
  hostId: string;
  /** The host credential (`ahc_…`); sent only as `Authorization: Bearer`, never logged. */
  credential: string;
  attemptId: string;
  fetch?: typeof fetch;
  /** Tries per batch (first included). Default 5. */
  maxTries?: number;
  /** First retry delay, doubled per retry. Default 200 ms. */
  retryDelayMs?: number;
  sleep?: (ms: number) => Promise<void>;
}

interface Pending {
  event: { seq: number; event_type: AgentEventType; payload: Record<string, unknown>; is_error: boolean };
  resolve: () => void;
  reject: (err: Error) => void;
}

const BATCH_LIMIT = 100;

/** POSTs JSON with the host credential; resolves with the status and parsed body (or undefined). */
export async function fetchHostJson(options: { fetch: typeof fetch; url: string; credential: string; body: unknown }): Promise<{ status: number; body: unknown }> {
  const res = await options.fetch(options.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${options.credential}` },
    body: JSON.stringify(options.body),
  });
  const text = await res.text();
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  return { status: res.status, body };
}

function errorMessageOf(body: unknown): string {
  const message = (body as { error?: { message?: unknown } } | undefined)?.error?.message;
  return typeof message === 'string' ? message : 'no error message';
}

export class ApiEventSink implements EventSink {
  private nextSeq = 0;
  private queue: Pending[] = [];
  private flushing = false;
  private fenced: AttemptFencedError | undefined;
  private readonly url: string;
  private readonly fetchFn: typeof fetch;
  private readonly sleep: (ms: number) => Promise<void>;

  constructor(private readonly options: ApiEventSinkOptions) {
    const base = options.apiUrl.replace(/\/+$/, '');
    this.url = `${base}/v1/agent/hosts/${encodeURIComponent(options.hostId)}/attempts/${encodeURIComponent(options.attemptId)}/events`;
    this.fetchFn = options.fetch ?? fetch;
    this.sleep = options.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms)));
  }

  emit(type: AgentEventType, payload: Record<string, unknown>, options?: { isError?: boolean }): Promise<void> {
    if (this.fenced) return Promise.reject(this.fenced);
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ event: { seq: this.nextSeq++, event_type: type, payload, is_error: options?.isError ?? false }, resolve, reject });
      void this.flush();
    });
  }

  /** Posts queued events in order, one batch at a time. */
  private async flush(): Promise<void> {
    if (this.flushing) return;
    this.flushing = true;
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, BATCH_LIMIT);
        try {
          await this.post(batch.map((p) => p.event));
          for (const p of batch) p.resolve();
        } catch (err) {
          const error = err instanceof Error ? err : new Error(String(err));
          for (const p of batch) p.reject(error);
          if (error instanceof AttemptFencedError) {
            for (const p of this.queue.splice(0)) p.reject(error);
          }
        }
      }
    } finally {
      this.flushing = false;
    }
  }

  private async post(events: Array<Pending['event']>): Promise<void> {
    const maxTries = this.options.maxTries ?? 5;
    let delay = this.options.retryDelayMs ?? 200;
    for (let tries = 1; ; tries += 1) {
      const failure = await this.tryPost(events);
      if (!failure) return;
      if (!failure.retryable || tries >= maxTries) throw failure.error;
      await this.sleep(delay);
      delay *= 2;
    }
  }

  /** One POST: undefined when stored, else the error and whether a retry may help. */
  private async tryPost(events: Array<Pending['event']>): Promise<{ error: Error; retryable: boolean } | undefined> {
    let response: { status: number; body: unknown };
    try {
      response = await fetchHostJson({ fetch: this.fetchFn, url: this.url, credential: this.options.credential, body: { events } });
    } catch (err) {
      return { error: new Error(`event write failed: ${err instanceof Error ? err.message : String(err)}`), retryable: true };
    }
    const { status, body } = response;
    if (status >= 200 && status < 300) return undefined;
    if (status === 409) {
      this.fenced = new AttemptFencedError(this.options.attemptId);
      return { error: this.fenced, retryable: false };
    }
    return { error: new EventRejectedError(status, `event write refused with ${status}: ${errorMessageOf(body)}`), retryable: status >= 500 || status === 429 };
  }
}
