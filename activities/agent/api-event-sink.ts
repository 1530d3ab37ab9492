/**
 * The host runner's {@link EventSink}: posts a driver's events to the control-plane API
 * (`POST /v1/agent/hosts/:hostId/attempts/:attemptId/events`, the contract `attemptEvents` of
 * lib/contracts/host-api.ts, through the internal JSON client) with the host credential. It numbers
 * events 0, 1, 2… itself, batches events emitted while a post is in flight (up to 100), and
 * resolves each `emit` once its event is stored. Transient failures (network, 5xx, 429) are
 * retried with backoff; the API dedupes by attempt and seq, so a retry never stores twice. A 409
 * means the attempt is no longer current: {@link AttemptFencedError} is thrown (then and for every
 * later emit) so the driver stops.
 */
import * as hostApi from '../../lib/contracts/host-api';
import { InternalCallError, InternalClient } from '../../lib/http/internal-client';
import type { AgentEventType, EventSink } from './types';

/** Per-post timeout: a full batch is up to ~25 MB of payloads (lib/contracts/host-api.ts). */
export const EVENT_POST_TIMEOUT_MS = 30_000;

/** The attempt was finished, replaced or is not this host's: its events are refused. */
export class AttemptFencedError extends Error {
  constructor(readonly attemptId: string) {
    super(`Attempt ${attemptId} is not current; its events are refused`);
    this.name = 'AttemptFencedError';
  }
}

/** A refusal a retry cannot fix (4xx other than 409 and 429). */
export class EventRejectedError extends Error {
  constructor(readonly status: number, message: string, options?: { cause?: unknown }) {
    super(message, options);
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
  /** Replaceable for tests; the global fetch by default. */
  fetch?: typeof fetch;
  /** Per-post timeout; {@link EVENT_POST_TIMEOUT_MS} by default. A post that times out is retried. */
  timeoutMs?: number;
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

const BATCH_LIMIT = hostApi.MAX_EVENTS_PER_BATCH;

export class ApiEventSink implements EventSink {
  private nextSeq = 0;
  private queue: Pending[] = [];
  private flushing = false;
  private fenced: AttemptFencedError | undefined;
  private readonly http: InternalClient;
  private readonly sleep: (ms: number) => Promise<void>;

  constructor(private readonly options: ApiEventSinkOptions) {
    this.http = new InternalClient({
      service: 'control-plane API', baseUrl: options.apiUrl, token: options.credential,
      timeoutMs: options.timeoutMs ?? EVENT_POST_TIMEOUT_MS, fetch: options.fetch,
    });
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
    try {
      await this.http.call(hostApi.attemptEvents, { params: { hostId: this.options.hostId, attemptId: this.options.attemptId }, body: { events } });
      return undefined;
    } catch (err) {
      if (!(err instanceof InternalCallError)) throw err;
      // No answer (network error, timeout): the batch may or may not be stored; a retry is deduped.
      if (err.status === undefined) return { error: err, retryable: true };
      // A 2xx outside the contract: the API answered, but not as agreed; retrying will not help.
      if (err.failure === 'invalid_response') return { error: err, retryable: false };
      if (err.status === 409) {
        this.fenced = new AttemptFencedError(this.options.attemptId);
        return { error: this.fenced, retryable: false };
      }
      const message = `event write refused with ${err.status}: ${err.serverMessage ?? 'no error message'}`;
      return { error: new EventRejectedError(err.status, message, { cause: err }), retryable: err.status >= 500 || err.status === 429 };
    }
  }
}
