/**
 * Puts a gateway together from settings: the registry from its files, the database state, the
 * inference dependencies, and the parts that live beside the hot path (identity caches, the
 * request-log writer, runtime configuration). `main.ts` and the tests both start gateways
 * through here, so what runs in production is what is tested.
 */
import type { Db } from '../lib/db';
import { accessTokensFrom } from '../lib/identity/access-tokens';
import type { Logger } from '../lib/logger';
import type { Settings } from '../lib/settings';
import type { GatewayDeps } from './deps';
import { gatewayContextDeps } from './deps';
import { GrantCache } from './agent-grants/grant-cache';
import { ApiKeyCache } from './identity/api-keys';
import { siteIdentity } from './identity/site-identity';
import { loadGatewayConfiguration } from './registry';
import { GatewayMetrics } from './ops/metrics';
import { createRequestLog } from './request-log';
import { createAlerts } from './ops/alerts';
import { RegistryHolder } from './registry/holder';
import { prepareRoutingFile } from './routing-file';
import type { Rng } from './routing/weighted-order';
import { RuntimeConfig } from './runtime-config/runtime-state';
import { SETTING } from './runtime-config/types';
import { createGatewayListener, type GatewayListener } from './server';
import { DatabaseState } from './store/database-state';
import { SiteSettings } from './store/site-settings';

export interface AssembleOptions {
  settings: Settings;
  /** Environment for `${NAME}` expansion in the models file. */
  env: Readonly<Record<string, string | undefined>>;
  cwd: string;
  log: Logger;
  /** The database pool, or null without a database (`DB_ENABLED=false` or no `DATABASE_URL`). */
  db: Db | null;
  rng?: Rng;
  /** Clock of the routing core (tests); default `Date.now`. */
  now?: () => number;
  /** Hosts exempt from the outbound concurrency limit; default the local hosts of CONCURRENCY_EXEMPT_HOSTS (tests only). */
  concurrencyExemptHosts?: readonly string[];
}

export interface GatewayAssembly {
  deps: GatewayDeps;
  listener: GatewayListener;
  /** Connects to the database (retrying in the background when it is down) and starts background work. */
  start(): Promise<void>;
  /** Stops background work and closes upstream pools (not the database pool, which the caller owns). */
  stop(): Promise<void>;
}

/** Step run once the database answers (at startup, or later when it comes back). */
type ReadyStep = () => Promise<void>;
/** Step run at shutdown, in reverse order of registration. */
type StopStep = () => Promise<void> | void;

/** Applies stored runtime state; a failure is logged and the files alone stay in force (never fatal). */
async function startRuntimeConfig(runtimeConfig: RuntimeConfig, log: Logger): Promise<void> {
  try {
    await runtimeConfig.start();
  } catch (err) {
    log.error({ err, event: 'runtime_config_not_applied' }, 'Stored runtime configuration could not be read; serving the configuration files only');
  }
}

/** Builds a gateway. Configuration errors (unknown router, bad trust networks…) throw here. */
export function assembleGateway(options: AssembleOptions): GatewayAssembly {
  const { settings, env, cwd, log, db } = options;
  const { registry: fileRegistry, distribution } = loadGatewayConfiguration({ settings, env, cwd, log });
  // The routing file's default router, and its local/remote split only without a database (docs/routing-file.md).
  const { registry, routingFile } = prepareRoutingFile({ registry: fileRegistry, settings, env, cwd, log, distribution, databaseConfigured: db !== null });
  const database = new DatabaseState(db, log);
  const keys = db ? new ApiKeyCache(db, log, settings.AUTH_KEY_REFRESH_SECONDS * 1000) : undefined;
  const grants = db ? new GrantCache(db, log, settings.AUTH_KEY_REFRESH_SECONDS * 1000) : undefined;
  const identity = siteIdentity(settings, distribution);
  const context = gatewayContextDeps(settings, {
    registry: new RegistryHolder(registry), log, keys, grants, rng: options.rng, now: options.now, concurrencyExemptHosts: options.concurrencyExemptHosts,
    site: { siteName: identity.name, siteUrl: identity.publicBaseUrl },
  });
  const siteSettings = new SiteSettings(db, log);
  const runtimeConfig = new RuntimeConfig({ db, holder: context.registry, log });
  context.limits.isExempt = (modelId) => runtimeConfig.isConcurrencyExempt(modelId);
  context.routewise.storedSettings = () => runtimeConfig.state.settings.get(SETTING.routewise);
  context.offload.source = () => runtimeConfig.state.settings;
  const requestLog = createRequestLog({ settings, db, log, flags: siteSettings, cwd });
  const alerts = createAlerts({ settings, env, cwd, log, distribution, siteSettings, registry: context.registry, gate: context.gate, breakers: context.routing.breakers, ...(options.now ? { now: options.now } : {}) });
  const metrics = new GatewayMetrics({
    registry: context.registry, breakers: context.routing.breakers, concurrency: context.concurrency,
    requestLog: requestLog ? () => requestLog.requestLog.writer : undefined,
  });
  context.routing.upstreamAnswers = metrics.requests.upstream;
  const tokens = accessTokensFrom(settings, log, db);
  const deps: GatewayDeps = {
    ...context, log, database, settings, distribution, siteSettings, keys, runtimeConfig, tokens, requestLog: requestLog?.requestLog,
    routingFile, metrics, alerts,
  };
  const onReady: ReadyStep[] = [
    () => siteSettings.start(), () => tokens.ring.start(), () => startRuntimeConfig(runtimeConfig, log), async () => keys?.start(), async () => grants?.start(),
    async () => { if (db) await context.limits.seed(db); },
    async () => {
      if (db) {
        await context.routewise.start({
          db, registry: () => context.registry.current, refreshMs: settings.ROUTEWISE_QUOTA_REFRESH_SECONDS * 1000,
          onError: (err) => log.warn({ err, event: 'routewise_quota_refresh_failed' }, 'routewise quota use could not be read from api_logs; keeping the counts in memory'),
        });
      }
    },
  ];
  const onStop: StopStep[] = [
    () => context.upstream.close(), () => siteSettings.stop(), () => tokens.ring.stop(), () => runtimeConfig.stop(), () => keys?.stop(), () => grants?.stop(), () => routingFile.probe.stop(),
    () => context.routewise.stop(), () => alerts.stop(),
  ];
  if (requestLog) {
    onReady.push(() => requestLog.start());
    onStop.push(() => requestLog.stop());
  }
  const listener = createGatewayListener(deps);
  onStop.push(() => listener.close());
  return {
    deps,
    listener,
    start: async () => {
      // Report-only probing of local routing-file entries; independent of the database.
      routingFile.probe.start();
      // Alerts need no database: snooze and mutes read the settings cache (empty until it loads).
      alerts.start();
      // The routewise latency prober: leases from the database when there is one (a round is skipped while it is down).
      context.routewise.startProber({ db, registry: () => context.registry.current, log });
      await database.startup(async () => {
        for (const step of onReady) await step();
      });
    },
    stop: async () => {
      database.stop();
      for (const step of onStop.reverse()) await step();
    },
  };
}
