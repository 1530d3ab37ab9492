/**
 * The host runner's calls to the control-plane API with its own credential: an attempt's context
 * and its inference grant. A 409 means the attempt is no longer current (fenced): the runner must
 * stop working on it.
 */
import type { AttemptContext } from '../../agent/jobs/attempt-context';

export class AttemptNotCurrentError extends Error {
  constructor(attemptId: string) {
    super(`Attempt ${attemptId} is not current`);
    this.name = 'AttemptNotCurrent';
  }
}

/**
 * A call the control-plane API refused or that got no answer. The message (for the host runner's
 * log) holds the call and the API's answer; owners are never shown it (turn-runner.ts words their
 * message from `status` and `code`).
 */
export class HostApiError extends Error {
  constructor(
    message: string,
    /** The API's HTTP status; undefined when no answer came. */
    readonly status: number | undefined,
    /** The API's error code (`model_not_found`, `service_unavailable`, …) when it gave one. */
    readonly code: string | undefined,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'HostApiError';
  }
}

export interface HostApiOptions {
  apiUrl: string;
  hostId: string;
  credential: string;
  timeoutMs?: number;
}

export interface TurnGrant {
  grant_id: string;
  token: string;
  expires_at: string;
  model: string;
}

export class HostApiClient {
  constructor(private readonly options: HostApiOptions) {}

  private async call<T>(method: 'GET' | 'POST', path: string, attemptId: string): Promise<T> {
    const url = new URL(`/v1/agent/hosts/${encodeURIComponent(this.options.hostId)}${path}`, this.options.apiUrl);
    let res: Response;
    try {
      res = await fetch(url, {
        method,
        headers: { authorization: `Bearer ${this.options.credential}`, ...(method === 'POST' ? { 'content-type': 'application/json' } : {}) },
        ...(method === 'POST' ? { body: '{}' } : {}),
        signal: AbortSignal.timeout(this.options.timeoutMs ?? 15_000),
      });
    } catch (err) {
      throw new HostApiError(`control-plane API did not answer ${method} ${url.pathname}: ${(err as Error).message}`, undefined, undefined, { cause: err });
    }
    if (res.status === 409) throw new AttemptNotCurrentError(attemptId);
    if (!res.ok) {
      const text = (await res.text()).slice(0, 300);
      let code: string | undefined;
      try {
        const parsed = (JSON.parse(text) as { error?: { code?: unknown } }).error?.code;
        if (typeof parsed === 'string') code = parsed;
      } catch {
        // not JSON: no code
      }
      throw new HostApiError(`control-plane API answered ${res.status} to ${method} ${url.pathname}: ${text}`, res.status, code);
    }
    return (await res.json()) as T;
  }

  attemptContext(attemptId: string): Promise<AttemptContext> {
    return this.call('GET', `/attempts/${encodeURIComponent(attemptId)}/context`, attemptId);
  }

  turnGrant(attemptId: string): Promise<TurnGrant> {
    return this.call('POST', `/attempts/${encodeURIComponent(attemptId)}/grant`, attemptId);
  }
}
