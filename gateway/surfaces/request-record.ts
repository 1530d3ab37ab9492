/**
 * The one record of what happened to an inference request: who called, which model and surface,
 * whether it streamed, which route answered (`_routing`), usage and pricing, why it was refused or
 * failed, its timings, and the inputs of the user-message shape. It is also the request's state
 * (request id, lazy logger): the server creates it when the request arrives, the handlers fill it
 * once along the path, {@link RequestRecord.end} seals it when the response has ended, and then
 * the request log (`gateway/request-log/row.ts`, one function from record to row), the metrics
 * (`gateway/ops/`) and alerts read it. Nothing is copied field by field.
 *
 * Allocation-light by construction: one object per request, every field initialised in the
 * constructor (one stable hidden class), references only; nothing is serialized, hashed or priced
 * here.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { ClientIpInfo } from '../../lib/client-address/client-address';
import { LazyRequestState } from '../../lib/http/request-context';
import type { Logger } from '../../lib/logger';
import type { Caller } from '../auth/caller';
import type { Pricing } from '../registry/types';
import type { OffloadAttribution } from '../routing/offload';
import type { FailedAttempt } from '../upstream/upstream-error';
import type { Usage } from './usage';

/** The internal `_routing` attribution: kept for logs and analytics, never sent to clients. */
export interface RoutingAttribution {
  provider: string;
  base_url: string;
  endpoint_id: string;
  fallback?: boolean;
  failed_attempts?: FailedAttempt[];
  /** Set when the request was offloaded: the reason flag, `offload_endpoint_id` when the offload route failed. */
  offload?: OffloadAttribution;
}

/** Why a request was refused before reaching a handler, with the presented credential's state. */
export interface Rejection {
  /** e.g. `missing_api_key`, `invalid_api_key`, `ip_blocked`. */
  reason: string;
  /** e.g. `missing`, `unknown`, `revoked`, `expired`, `user_suspended`. */
  credentialState?: string;
}

/** Status recorded when the client went away before the response ended (nginx's convention). */
export const CLIENT_CLOSED_STATUS = 499;

/** Surface names by inference path; other paths are named as they are (a handler may name its own). */
const SURFACES: ReadonlyMap<string, string> = new Map([
  ['/v1/chat/completions', 'chat'],
  ['/v1/completions', 'completions'],
  ['/v1/responses', 'responses'],
  ['/v1/embeddings', 'embeddings'],
  ['/v1/messages', 'messages'],
]);

/** The surface a path serves: its name, or the path itself. */
export function surfaceOf(path: string): string {
  return SURFACES.get(path) ?? path;
}

function headerText(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return typeof value === 'string' ? value : undefined;
}

export class RequestRecord extends LazyRequestState {
  /** The route path (`/v1/chat/completions`…). */
  readonly path: string;
  /** The surface (`chat`, `messages`…): from the path, or named by the handler (the messages prefix). */
  surface: string;
  /** The resolved client address (docs/client-address.md). */
  client: ClientIpInfo | undefined;
  /** Who is calling; undefined when the request was refused before admission. */
  caller: Caller | undefined = undefined;
  /** The model asked for, then its public id once resolved. */
  model: string | undefined = undefined;
  stream = false;
  /** `X-Probe: synthetic` honoured for this request: omitted from logs unless `log_synthetic_probes`. */
  synthetic = false;
  /** The route that answered; undefined when none did. */
  routing: RoutingAttribution | undefined = undefined;
  usage: Usage | undefined = undefined;
  /** The pricing of the route that answered. */
  pricing: Pricing | undefined = undefined;
  /** Why the request was refused (set by auth code before throwing, or derived at the end). */
  rejection: Rejection | undefined = undefined;
  /** The error code of the response, when it failed. */
  errorCode: string | undefined = undefined;
  /** HTTP status sent; {@link CLIENT_CLOSED_STATUS} when the client left first. Set by {@link end}. */
  status = 0;
  /** `performance.now()` when the request arrived. */
  readonly startedAt: number;
  /** Milliseconds from arrival to the first upstream stream chunk (streams only). */
  firstTokenMs: number | undefined = undefined;
  /** Milliseconds from arrival to the end of the response. Set by {@link end}. */
  latencyMs = 0;
  /** Epoch milliseconds when the response ended (the row's `created_at`, the pricing instant). Set by {@link end}. */
  at = 0;
  // Message-shape inputs (docs/automation-score.md), noted in one pass by `noteChatFacts`.
  /** `user` messages in the request. */
  numUserTurns: number | undefined = undefined;
  /** Tool calls made by `assistant` messages in the request's history. */
  numToolCalls: number | undefined = undefined;
  /** Images (`image_url` parts) in the request's user messages, priced by `pricing.image`. */
  images: number | undefined = undefined;
  /** Audio clips (`input_audio` parts) in the request's user messages. */
  audio: number | undefined = undefined;
  /** The newest user message's content as sent (string or parts array); measured when the row is built. */
  lastUserMessage: unknown = undefined;
  /** `User-Agent` and `X-Session-Id` as sent (read by {@link end}). */
  userAgent: string | undefined = undefined;
  sessionId: string | undefined = undefined;

  /** The response whose end waits for this record's row to be journaled (gateway/request-log/held-end.ts). */
  heldResponse: { release(): void } | undefined = undefined;

  constructor(requestId: string, root: Logger, path: string, client: ClientIpInfo | undefined, startedAt: number) {
    super(requestId, root);
    this.path = path;
    this.surface = surfaceOf(path);
    this.client = client;
    this.startedAt = startedAt;
  }

  /** Lets the response's held end go (its row is journaled, or will not be logged). */
  releaseResponse(): void {
    const res = this.heldResponse;
    if (res === undefined) return;
    this.heldResponse = undefined;
    res.release();
  }

  /** Whether the request was refused before a handler served it (no caller, or a refusal label). */
  get rejected(): boolean {
    return this.rejection !== undefined || this.caller === undefined;
  }

  /**
   * Seals the record once the response has ended (or the client left): status, end time, latency,
   * the two logged headers, and for a refused request the rejection label when auth code set none.
   */
  end(req: IncomingMessage, res: ServerResponse): void {
    const clientGone = res.destroyed && !res.writableEnded;
    this.status = clientGone ? CLIENT_CLOSED_STATUS : res.statusCode;
    this.at = Date.now();
    this.latencyMs = performance.now() - this.startedAt;
    this.userAgent = headerText(req, 'user-agent');
    this.sessionId = headerText(req, 'x-session-id');
    if (this.caller === undefined && this.rejection === undefined) this.rejection = derivedRejection(req, this.status, this.errorCode);
    if (clientGone) this.errorCode = 'client_disconnected';
  }
}

/** The rejection of a refused request whose auth code set no label: missing or invalid key, else its error code. */
function derivedRejection(req: IncomingMessage, status: number, errorCode: string | undefined): Rejection {
  if (status === 401) {
    return req.headers.authorization
      ? { reason: 'invalid_api_key', credentialState: 'unknown' }
      : { reason: 'missing_api_key', credentialState: 'missing' };
  }
  return { reason: errorCode ?? 'rejected' };
}
