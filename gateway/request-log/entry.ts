/**
 * What the hot path hands the request log: one small object of references, built when a response
 * closes. Nothing here is serialized, hashed or priced on the request path; {@link toApiLogRow}
 * does that at flush time.
 */
import type { Caller } from '../auth/caller';
import type { ClientIpInfo } from '../../lib/client-address/client-address';
import type { Pricing } from '../registry/types';
import type { RoutingAttribution } from '../surfaces/state';
import type { Usage } from '../surfaces/usage';

/** Why a request was refused before reaching a handler, with the presented credential's state (spec 5.11). */
export interface Rejection {
  /** e.g. `missing_api_key`, `invalid_api_key`, `ip_blocked`. */
  reason: string;
  /** e.g. `missing`, `unknown`, `revoked`, `expired`, `user_suspended`. */
  credentialState?: string;
}

/** One request as queued for `api_logs`. Fields are references into the request's state. */
export interface LogEntry {
  /** Epoch milliseconds when the response closed. */
  at: number;
  requestId: string;
  /** The route path (`/v1/chat/completions`…), mapped to a surface name at flush time. */
  path: string;
  /** Surface named by the handler, when it differs from the path's. */
  surface: string | undefined;
  status: number;
  latencyMs: number;
  firstTokenMs: number | undefined;
  errorCode: string | undefined;
  caller: Caller | undefined;
  model: string | undefined;
  stream: boolean;
  routing: RoutingAttribution | undefined;
  usage: Usage | undefined;
  pricing: Pricing | undefined;
  client: ClientIpInfo | undefined;
  numUserTurns: number | undefined;
  numToolCalls: number | undefined;
  /** Images sent in the request (`image_url` content parts), priced by `pricing.image`. */
  images?: number | undefined;
  /** The newest user message's content: a string, or the content-parts array as sent. */
  lastUserMessage: unknown;
  userAgent: string | undefined;
  sessionId: string | undefined;
  synthetic: boolean;
  rejection: Rejection | undefined;
}
