/**
 * Request state and dependencies shared by the inference surfaces.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { writeJson } from '../../lib/http/json-response';
import type { RequestState } from '../../lib/http/request-context';
import type { GrantCache } from '../agent-grants/grant-cache';
import type { Authenticator, Caller } from '../auth/caller';
import type { Rejection } from '../request-log/entry';
import type { Pricing } from '../registry/types';
import type { AdminPrincipal } from '../admin/guard';
import type { AuthGate } from '../auth/gate';
import type { UserLimits } from '../auth/user-limits';
import type { ClientAddressResolver, ClientIpInfo } from '../../lib/client-address/client-address';
import type { RegistryHolder } from '../registry/holder';
import type { TierThresholds } from '../routing/prompt-estimate';
import type { ConcurrencyLimiter } from '../routing/concurrency';
import type { OffloadAttribution, OffloadPolicies } from '../routing/offload';
import type { RoutingCore } from '../routing/selector';
import type { Rng } from '../routing/weighted-order';
import type { Routewise } from '../routing/routewise-runtime';
import type { UpstreamClient } from '../upstream/client';
import type { FailedAttempt } from '../upstream/upstream-error';
import type { Usage } from './usage';

/** The internal `_routing` attribution (spec 2.10): kept for logs and analytics, never sent to clients. */
export interface RoutingAttribution {
  provider: string;
  base_url: string;
  endpoint_id: string;
  fallback?: boolean;
  failed_attempts?: FailedAttempt[];
  /** Set when the request was offloaded (spec 2.9): the reason flag, `offload_endpoint_id` when the offload route failed. */
  offload?: OffloadAttribution;
}

export interface GatewayState extends RequestState {
  /** The resolved client address (spec 5.12). */
  client?: ClientIpInfo;
  /** Who is calling (inference routes; set before the handler runs). */
  caller?: Caller;
  /** The administrator (admin routes). */
  admin?: AdminPrincipal;
  /** The account of an access token (account routes: `/auth/api-keys`). */
  accountId?: number;
  routing?: RoutingAttribution;
  usage?: Usage | undefined;
  // Per-request facts for the request log (`api_logs`), set by the server and handlers; references only.
  /** `performance.now()` when the request arrived. */
  startedAt?: number;
  /** The surface, when it differs from the path's (e.g. a messages prefix). */
  surface?: string;
  /** The model asked for (public id once resolved). */
  model?: string;
  stream?: boolean;
  /** Milliseconds from arrival to the first upstream stream chunk (streams only). */
  firstTokenMs?: number;
  /** `user` messages in the request. */
  numUserTurns?: number;
  /** Tool calls made by `assistant` messages in the request's history. */
  numToolCalls?: number;
  /** The newest user message's content as sent (string or parts array); measured at flush time. */
  lastUserMessage?: unknown;
  /** Images (`image_url` parts) in the request's user messages. */
  numImages?: number;
  /** The pricing of the route that answered. */
  pricing?: Pricing | undefined;
  /** The error code of the response, when it failed. */
  errorCode?: string;
  /** `X-Probe: synthetic` honoured for this request (spec 5.9): omitted from logs unless `log_synthetic_probes`. */
  synthetic?: boolean;
  /** Why the request was refused (set by auth code before throwing): logged only with `log_rejected_requests`. */
  rejection?: Rejection;
}

export interface GatewayContextDeps {
  registry: RegistryHolder;
  /** Inference grants (spec 5.3); absent without a database. */
  grants?: GrantCache | undefined;
  upstream: UpstreamClient;
  authenticator: Authenticator;
  /** Blocklist-then-credential admission (spec 5.1, 5.11). */
  gate: AuthGate;
  /** Per-user concurrency and daily quota. */
  limits: UserLimits;
  clientAddress: ClientAddressResolver;
  /** Breakers, affinity pins and prefill backlog of this process (spec 3.1, 3.2, 8). */
  routing: RoutingCore;
  /** Adaptive outbound concurrency per (provider label, API key). */
  concurrency: ConcurrencyLimiter;
  rng: Rng;
  /** The cost-aware strategy: which models it routes, their order, pool slots around attempts. */
  routewise: Routewise;
  /** Stored offload policies by model (spec 2.9); one map lookup per request. */
  offload: OffloadPolicies;
  tiers: TierThresholds;
  maxBodyBytes: number;
}

/**
 * What an inference handler gets: the Node request and response, the request's state, and
 * header access. No framework object: these routes are dispatched straight from the server's
 * request listener (see `gateway/server.ts`).
 */
export interface InferenceContext {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly state: GatewayState;
  /** A request header (lower-case name); repeated values joined by `, `. */
  header(name: string): string | undefined;
}

/** A handler of one inference route. */
export type InferenceHandler = (ctx: InferenceContext) => Promise<void>;

/** Sends a 200 JSON body. */
export function sendJson(ctx: InferenceContext, body: unknown): void {
  writeJson(ctx.res, 200, body);
}

/**
 * Records which route answers (before any response byte is written). Honoured synthetic probes
 * (spec 5.9) also get `X-Provider` naming the answering backend.
 */
export function attribute(ctx: InferenceContext, routing: RoutingAttribution): void {
  ctx.state.routing = routing;
  if (ctx.state.synthetic) ctx.res.setHeader('X-Provider', routing.provider);
}
