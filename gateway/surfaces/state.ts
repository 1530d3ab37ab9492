/**
 * Request state and dependencies shared by the inference surfaces.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { writeJson } from '../../lib/http/json-response';
import type { RequestState } from '../../lib/http/request-context';
import type { GrantCache } from '../agent-grants/grant-cache';
import type { Authenticator, Caller } from '../auth/caller';
import type { AdminPrincipal } from '../admin/guard';
import type { AccessPrincipal } from '../../lib/identity/access-tokens';
import type { AuthGate } from '../auth/gate';
import type { UserLimits } from '../auth/user-limits';
import type { ClientAddressResolver, ClientIpInfo } from '../../lib/client-address/client-address';
import type { RegistryHolder } from '../registry/holder';
import type { TierThresholds } from '../routing/prompt-estimate';
import type { ConcurrencyLimiter } from '../routing/concurrency';
import type { OffloadPolicies } from '../routing/offload';
import type { RoutingCore } from '../routing/selector';
import type { Rng } from '../routing/weighted-order';
import type { Routewise } from '../routing/routewise-runtime';
import type { UpstreamClient } from '../upstream/client';
import type { RequestRecord, RoutingAttribution } from './request-record';

/**
 * The state of a request served by the Koa app (health, models, auth, admin): request id and
 * logger, the client address, and the principal its route's guard set. Inference requests carry a
 * {@link RequestRecord} instead.
 */
export interface GatewayState extends RequestState {
  /** The resolved client address (docs/client-address.md). */
  client?: ClientIpInfo | undefined;
  /** Who is calling (routes that take an API key, e.g. the model list). */
  caller?: Caller | undefined;
  /** The administrator (admin routes). */
  admin?: AdminPrincipal;
  /** The account of an access token (account routes: `/auth/api-keys`). */
  accountId?: number;
  /** That access token's principal (its kind: the account's own, or an impersonation). */
  accountToken?: AccessPrincipal;
}

export interface GatewayContextDeps {
  registry: RegistryHolder;
  /** Inference grants (docs/agent-grants.md); absent without a database. */
  grants?: GrantCache | undefined;
  upstream: UpstreamClient;
  authenticator: Authenticator;
  /** Blocklist-then-credential admission (docs/identity.md). */
  gate: AuthGate;
  /** Per-user concurrency and daily quota. */
  limits: UserLimits;
  clientAddress: ClientAddressResolver;
  /** Breakers, affinity pins and prefill backlog of this process (docs/routing.md). */
  routing: RoutingCore;
  /** Adaptive outbound concurrency per (provider label, API key). */
  concurrency: ConcurrencyLimiter;
  rng: Rng;
  /** The cost-aware strategy: which models it routes, their order, pool slots around attempts. */
  routewise: Routewise;
  /** Stored offload policies by model; one map lookup per request. */
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
  /** The request's record (its state): what the handler learns goes here. */
  readonly state: RequestRecord;
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
 * also get `X-Provider` naming the answering backend.
 */
export function attribute(ctx: InferenceContext, routing: RoutingAttribution): void {
  ctx.state.routing = routing;
  if (ctx.state.synthetic) ctx.res.setHeader('X-Provider', routing.provider);
}
