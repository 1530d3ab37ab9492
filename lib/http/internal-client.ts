/**
 * The one JSON client for calls between our own services (docs/agent-control-plane.md "Internal
 * contracts"): the host runner → control-plane API, and the control plane → the gateway's grant
 * dispatch. Each call names an {@link Endpoint} of lib/contracts/, sends its JSON body with the
 * service's bearer token, gives up after a timeout (10 s unless the client or the call says
 * otherwise), and parses a 2xx answer with the endpoint's response schema.
 *
 * Every failure is one typed error, {@link InternalCallError}: the endpoint, the HTTP status
 * (undefined when no answer came), whether the call timed out, and the server's error code and
 * message. The token is never part of an error: it is redacted from whatever the server or the
 * network layer said.
 */
import type { Endpoint, RequestOf, ResponseOf, RouteParams } from '../contracts/endpoint';
import { pathOf } from '../contracts/endpoint';

/** Per-call timeout when neither the client nor the call sets one. */
export const DEFAULT_INTERNAL_TIMEOUT_MS = 10_000;

/** Longest part of a server's error text kept in an error. */
const SERVER_TEXT_CHARS = 300;

/**
 * How a call failed: `network` (no answer: refused, reset, DNS), `timeout` (no complete answer in
 * time), `status` (a non-2xx answer), `invalid_response` (a 2xx whose body breaks the contract).
 */
export type InternalCallFailure = 'network' | 'timeout' | 'status' | 'invalid_response';

export interface InternalCallErrorInit {
  /** Which service was called, in words: `gateway`, `control-plane API`. */
  service: string;
  endpoint: string;
  method: string;
  path: string;
  failure: InternalCallFailure;
  status?: number | undefined;
  code?: string | undefined;
  serverMessage?: string | undefined;
  /** What went wrong when there is no server message: the network error, the schema issue. */
  detail?: string | undefined;
  timeoutMs?: number | undefined;
  cause?: unknown;
}

function describe(init: InternalCallErrorInit): string {
  const call = `${init.endpoint} (${init.method} ${init.path})`;
  switch (init.failure) {
    case 'timeout': return `${init.service} did not answer ${call} within ${init.timeoutMs} ms`;
    case 'network': return `${init.service} did not answer ${call}: ${init.detail ?? 'no details'}`;
    case 'status': return `${init.service} answered ${init.status} to ${call}: ${init.serverMessage ?? 'no error message'}`;
    case 'invalid_response': return `${init.service} answered ${call} with ${init.status} and a body outside its contract: ${init.detail ?? 'no details'}`;
  }
}

/**
 * A call to one of our own services that failed. Subclasses (`GrantDispatchError`,
 * `HostApiError`) only rename it, so callers can tell which service refused.
 */
export class InternalCallError extends Error {
  readonly service: string;
  /** The endpoint's name (`grant issue`). */
  readonly endpoint: string;
  readonly failure: InternalCallFailure;
  /** The HTTP status; undefined when no answer came (network error or timeout). */
  readonly status: number | undefined;
  /** Whether the call ran out of time. */
  readonly timedOut: boolean;
  /** The server's error code (`model_not_found`, `conflict`, …) when it gave one. */
  readonly code: string | undefined;
  /** The server's error message (or the start of its body) when it answered with an error. */
  readonly serverMessage: string | undefined;

  constructor(init: InternalCallErrorInit) {
    super(describe(init), init.cause === undefined ? undefined : { cause: init.cause });
    this.name = new.target.name;
    this.service = init.service;
    this.endpoint = init.endpoint;
    this.failure = init.failure;
    this.status = init.status;
    this.timedOut = init.failure === 'timeout';
    this.code = init.code;
    this.serverMessage = init.serverMessage;
  }
}

export interface InternalClientOptions {
  /** Which service answers, in error messages: `gateway`, `control-plane API`. */
  service: string;
  /** The service's base URL, e.g. `http://127.0.0.1:8081` (a path prefix is kept); a function is read at each call (a URL an admin setting can change). */
  baseUrl: string | (() => string);
  /** Sent as `Authorization: Bearer`; never part of an error or a log line. */
  token: string;
  /** Default per-call timeout; {@link DEFAULT_INTERNAL_TIMEOUT_MS} when unset. */
  timeoutMs?: number | undefined;
  /** Replaceable for tests; the global fetch by default. */
  fetch?: typeof fetch | undefined;
  /** The error class thrown (a subclass of {@link InternalCallError}); the base class by default. */
  errorClass?: new (init: InternalCallErrorInit) => InternalCallError;
}

type ParamsInput<R extends string> = keyof RouteParams<R> extends never ? { params?: RouteParams<R> } : { params: RouteParams<R> };

/** One call: the path parameters, the body (`{}` when a POST gives none), and per-call overrides. */
export type CallInput<E extends Endpoint> = ParamsInput<E['route']> & {
  body?: RequestOf<E>;
  /** Overrides the client's timeout for this call. */
  timeoutMs?: number;
  /** Aborting it ends the call as a network failure (the caller knows why it aborted). */
  signal?: AbortSignal;
};

interface ErrorBody {
  error?: { message?: unknown; code?: unknown };
}

/** A client of one of our own services. */
export class InternalClient {
  private readonly base: () => string;
  private readonly doFetch: typeof fetch;
  private readonly ErrorClass: new (init: InternalCallErrorInit) => InternalCallError;

  constructor(private readonly options: InternalClientOptions) {
    const baseUrl = options.baseUrl;
    const fixed = typeof baseUrl === 'string' ? baseUrl.replace(/\/+$/, '') : undefined;
    this.base = typeof baseUrl === 'string' ? () => fixed! : () => baseUrl().replace(/\/+$/, '');
    this.doFetch = options.fetch ?? fetch;
    this.ErrorClass = options.errorClass ?? InternalCallError;
  }

  /** Calls `endpoint`; resolves with its parsed answer or throws the client's {@link InternalCallError}. */
  async call<E extends Endpoint>(endpoint: E, input: CallInput<E>): Promise<ResponseOf<E>> {
    const path = pathOf(endpoint, (input.params ?? {}) as RouteParams<E['route']>);
    const timeoutMs = input.timeoutMs ?? this.options.timeoutMs ?? DEFAULT_INTERNAL_TIMEOUT_MS;
    const fail = (init: Omit<InternalCallErrorInit, 'service' | 'endpoint' | 'method' | 'path'>) =>
      new this.ErrorClass({ service: this.options.service, endpoint: endpoint.name, method: endpoint.method, path, timeoutMs, ...init });
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = input.signal ? AbortSignal.any([input.signal, timeout]) : timeout;
    const post = endpoint.method === 'POST';
    let status: number;
    let text: string;
    try {
      const res = await this.doFetch(`${this.base()}${path}`, {
        method: endpoint.method,
        headers: { authorization: `Bearer ${this.options.token}`, ...(post ? { 'content-type': 'application/json' } : {}) },
        ...(post ? { body: JSON.stringify(input.body ?? {}) } : {}),
        signal,
      });
      status = res.status;
      text = await res.text();
    } catch (err) {
      if (timeout.aborted && !input.signal?.aborted) throw fail({ failure: 'timeout', cause: err });
      throw fail({ failure: 'network', detail: this.redact(networkText(err)), cause: err });
    }
    if (status < 200 || status > 299) throw fail({ failure: 'status', status, ...this.serverError(text) });
    let body: unknown;
    try {
      body = text === '' ? undefined : JSON.parse(text);
    } catch {
      throw fail({ failure: 'invalid_response', status, detail: 'the body is not JSON' });
    }
    const parsed = endpoint.response.safeParse(body);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const field = issue?.path.join('.') ?? '';
      throw fail({ failure: 'invalid_response', status, detail: this.redact(`${field ? `'${field}' ` : ''}${issue?.message ?? 'invalid'}`) });
    }
    return parsed.data as ResponseOf<E>;
  }

  /** The code and message of an OpenAI-shaped error body, else the start of the text. */
  private serverError(text: string): { code?: string; serverMessage?: string } {
    let code: string | undefined;
    let message: string | undefined;
    try {
      const error = (JSON.parse(text) as ErrorBody | null)?.error;
      if (typeof error?.code === 'string') code = error.code;
      if (typeof error?.message === 'string') message = error.message;
    } catch {
      // not JSON: quote the text itself
    }
    message ??= text.trim() || undefined;
    return { ...(code !== undefined ? { code } : {}), ...(message !== undefined ? { serverMessage: this.redact(message.slice(0, SERVER_TEXT_CHARS)) } : {}) };
  }

  private redact(text: string): string {
    return this.options.token ? text.split(this.options.token).join('[redacted]') : text;
  }
}

/** The network layer's reason: undici hides the useful part (`ECONNREFUSED`) in `cause`. */
function networkText(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  const cause = (err as { cause?: { code?: unknown; message?: unknown } } | undefined)?.cause;
  const detail = typeof cause?.code === 'string' ? cause.code : typeof cause?.message === 'string' ? cause.message : undefined;
  return detail && !message.includes(detail) ? `${message} (${detail})` : message;
}
