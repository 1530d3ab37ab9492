/**
 * The gateway's dependencies: their types ({@link GatewayDeps}, what every route and the listener
 * receive; routes import them from here, never from `app.ts`, so no route depends on the app that
 * mounts it) and the inference surfaces' part built from settings (used by `gateway/assemble.ts`).
 */
import type { Logger } from '../lib/logger';
import type { AccessTokens } from '../lib/identity/access-tokens';
import type { Settings } from '../lib/settings';
import { AuthFailureBlocklist } from './auth/auth-failure-blocklist';
import { createAuthenticator } from './auth/caller';
import { AuthGate } from './auth/gate';
import { clientAddressResolverFrom } from '../lib/client-address/request-origin';
import { UserLimits } from './auth/user-limits';
import type { GrantCache } from './agent-grants/grant-cache';
import type { ApiKeyCache } from './identity/api-keys';
import type { GatewayMetrics } from './ops/metrics';
import type { DistributionState } from './registry/manifest';
import type { RequestLog } from './request-log';
import type { RoutingFile } from './routing-file';
import type { RuntimeConfig } from './runtime-config/runtime-state';
import type { DatabaseState } from './store/database-state';
import type { SiteSettings } from './store/site-settings';
import type { RegistryHolder } from './registry/holder';
import { AffinityTable } from './routing/affinity';
import { CircuitBreakers } from './routing/breaker';
import { ConcurrencyLimiter, CONCURRENCY_EXEMPT_HOSTS } from './routing/concurrency';
import { OffloadPolicies } from './routing/offload';
import { PrefillTracker } from './routing/prefill';
import { effectiveDefaultRouter } from './routing/routewise';
import { Routewise } from './routing/routewise-runtime';
import { fixedStrategy, logCircuitChanges, RoutingCore } from './routing/selector';
import { SETTING } from './runtime-config/types';
import type { HeaderOptions } from './adapters';
import type { GatewayContextDeps } from './surfaces/state';
import { UpstreamClient } from './upstream/client';
import type { Alerts } from './ops/alerts';

export interface GatewayDeps extends GatewayContextDeps {
  log: Logger;
  database: DatabaseState;
  settings: Settings;
  /** The distribution manifest's state (sign-up and `/site-config` depend on it). */
  distribution: DistributionState;
  /** Runtime settings (`site_settings`), cached in memory. */
  siteSettings: SiteSettings;
  /** API keys (absent without a database). */
  keys: ApiKeyCache | undefined;
  /** Access-token issuing and checking. */
  tokens: AccessTokens;
  /** Runtime configuration: the overlay of stored admin changes over the files. */
  runtimeConfig: RuntimeConfig;
  /** The request log (`api_logs`); absent without a database. */
  requestLog?: RequestLog | undefined;
  /** Prometheus metrics (`GET /metrics`, docs/metrics.md). */
  metrics: GatewayMetrics;
  /** The routing file (docs/routing-file.md): status, split adjustments, local endpoint health. */
  routingFile: RoutingFile;
  /** Chat-webhook alerts: the alerts file, snooze and mutes, and the engine when enabled (docs/alerts.md). */
  alerts: Alerts;
  cacheRefreshSeconds?: number;
}

export interface ContextOptions {
  registry: RegistryHolder;
  log: Logger;
  /** The API key cache (absent without a database: no key is valid). */
  keys?: ApiKeyCache | undefined;
  /** The inference grant cache (absent without a database: no grant is valid). */
  grants?: GrantCache | undefined;
  rng?: (() => number) | undefined;
  /** Clock for the routing core (ms); default `Date.now`. */
  now?: (() => number) | undefined;
  /**
   * Hosts exempt from the outbound concurrency limit. Default: the local engine hosts
   * (`CONCURRENCY_EXEMPT_HOSTS`). Only tests replace it (their fake upstreams run on 127.0.0.1); it
   * is not a setting.
   */
  concurrencyExemptHosts?: readonly string[] | undefined;
  /** The site identity as upstream headers (the aggregator's `HTTP-Referer` and `X-Title`). */
  site?: HeaderOptions | undefined;
}

/** The routing core (breaker, affinity, prefill) from settings. */
export function routingCoreFrom(settings: Settings, options: { rng: () => number; now: () => number; log: Logger; routewise: Routewise }): RoutingCore {
  const { now } = options;
  const breakers = new CircuitBreakers({
    failureThreshold: settings.CIRCUIT_FAILURE_THRESHOLD,
    cooldownMs: settings.CIRCUIT_COOLDOWN_SECONDS * 1000,
    minAvailability: settings.CIRCUIT_MIN_AVAILABILITY,
    availabilityAlpha: settings.CIRCUIT_AVAILABILITY_ALPHA,
    now,
  });
  logCircuitChanges(breakers, options.log);
  return new RoutingCore({
    breakers,
    affinity: new AffinityTable({
      enabled: settings.ROUTING_AFFINITY_ENABLED, ttlMs: settings.AFFINITY_TTL_SECONDS * 1000,
      maxAgeMs: settings.ROUTING_AFFINITY_MAX_AGE_SEC * 1000, sweepAbove: 1000, now,
    }),
    prefill: new PrefillTracker({
      enabled: settings.ROUTING_PREFILL_ENABLED, interveneTokens: settings.ROUTING_PREFILL_INTERVENE_TOKENS,
      elephantTokens: settings.ROUTING_ELEPHANT_PROMPT_TOKENS, maxElephantsPerEndpoint: settings.ROUTING_PREFILL_MAX_ELEPHANTS_PER_ENDPOINT,
      memoryMs: settings.ROUTING_PREFILL_MEMORY_SECONDS * 1000, now,
    }),
    rng: options.rng,
    affinityCeilingTokens: settings.ROUTING_PREFILL_AFFINITY_CEILING,
    strategies: new Map([['fixed', fixedStrategy], ['routewise', options.routewise.strategy()]]),
    defaultRouter: effectiveDefaultRouter('fixed', settings.ENABLE_ROUTEWISE),
  });
}

export function gatewayContextDeps(settings: Settings, options: ContextOptions): GatewayContextDeps {
  const authenticator = createAuthenticator({ userAuthEnabled: settings.USER_AUTH_ENABLED, keys: options.keys, grants: options.grants });
  const blocklist = new AuthFailureBlocklist({
    threshold: settings.AUTH_FAILURE_BLOCK_THRESHOLD,
    windowSec: settings.AUTH_FAILURE_BLOCK_WINDOW_SEC,
    durationSec: settings.AUTH_FAILURE_BLOCK_DURATION_SEC,
    exempt: settings.AUTH_FAILURE_BLOCK_EXEMPT_IPS,
  });
  const rng = options.rng ?? Math.random;
  const routewise = new Routewise({ defaultRouter: effectiveDefaultRouter('fixed', settings.ENABLE_ROUTEWISE) });
  const now = options.now ?? Date.now;
  const concurrency = new ConcurrencyLimiter({
    enabled: settings.UPSTREAM_CONCURRENCY_ENABLED,
    initialLimit: settings.UPSTREAM_CONCURRENCY_INITIAL_LIMIT,
    maxLimit: settings.UPSTREAM_CONCURRENCY_MAX_LIMIT,
    probeSuccessInterval: settings.UPSTREAM_CONCURRENCY_PROBE_SUCCESS_INTERVAL,
    acquireTimeoutMs: settings.UPSTREAM_CONCURRENCY_ACQUIRE_TIMEOUT_SEC * 1000,
    exemptHosts: options.concurrencyExemptHosts ?? CONCURRENCY_EXEMPT_HOSTS,
    now,
  });
  return {
    registry: options.registry,
    grants: options.grants,
    upstream: new UpstreamClient({
      connectMs: settings.UPSTREAM_CONNECT_TIMEOUT_SECONDS * 1000,
      firstByteMs: settings.UPSTREAM_FIRST_BYTE_TIMEOUT_SECONDS * 1000,
      idleMs: settings.UPSTREAM_IDLE_TIMEOUT_SECONDS * 1000,
      plainHttpClient: settings.UPSTREAM_HTTP_CLIENT,
    }, options.site, concurrency),
    routing: routingCoreFrom(settings, { rng, now, log: options.log, routewise }),
    concurrency,
    authenticator,
    gate: new AuthGate(authenticator, blocklist, options.log, { identifyCaller: settings.AUTH_FAILURE_IDENTIFY_CALLER }),
    limits: new UserLimits({ concurrency: settings.USER_CONCURRENCY_LIMIT, dailyQuotaUsd: settings.USER_DAILY_QUOTA_USD }),
    clientAddress: clientAddressResolverFrom(settings),
    rng,
    routewise,
    offload: new OffloadPolicies(SETTING.offload),
    tiers: { largeTokens: settings.ROUTING_LARGE_PROMPT_TOKENS, elephantTokens: settings.ROUTING_ELEPHANT_PROMPT_TOKENS },
    maxBodyBytes: Math.round(settings.GATEWAY_MAX_BODY_MIB * 1024 * 1024),
  };
}
