/**
 * The control-plane API for tests: the real Koa app on 127.0.0.1 over a test database, with the
 * run's Temporal client (or a lazy one that never connects when a test needs no workflows).
 */
import type { Client } from '@temporalio/client';
import { createApiApp } from '../../api/app';
import type { ApiDeps } from '../../api/deps';
import type { RouteEntry } from '../../lib/http/route-access';
import { serve, type Serving } from '../../lib/http/serve';
import type { Db } from '../../lib/db';
import { loadSettings } from '../../lib/settings';
import { createTemporalClient } from '../../lib/temporal';
import { accessTokensFrom } from '../../lib/identity/access-tokens';
import { ADMIN_TOKEN } from './admin';
import { captureLogs, type CapturedLogs } from './logs';
import { AgentSettings, liveSettings } from '../../agent/settings/settings-sync';

/** The JWT secret test gateways and APIs share, so one login works on both. */
export const TEST_JWT_SECRET = 'test-jwt-secret-of-at-least-32-bytes-long';

export interface TestApi {
  url: string;
  deps: ApiDeps;
  /** The API's log lines (its `deps.log`). */
  logs: CapturedLogs;
  /** Every route the API serves and what it requires. */
  routes: readonly RouteEntry[];
  close(): Promise<void>;
}

export interface TestApiOptions {
  db: Db;
  temporal?: Client;
  env?: Record<string, string>;
  temporalReachable?: () => Promise<boolean>;
  objectStore?: ApiDeps['objectStore'];
  grants?: ApiDeps['grants'];
  repoCredentials?: ApiDeps['repoCredentials'];
  /** The loopback port to listen on (default: any free one). */
  port?: number;
}

export async function startTestApi(options: TestApiOptions): Promise<TestApi> {
  const env = loadSettings({ ADMIN_TOKEN, AUTH_JWT_SECRET: TEST_JWT_SECRET, ...options.env });
  const temporal = options.temporal ?? createTemporalClient({ TEMPORAL_ADDRESS: '127.0.0.1:1', TEMPORAL_NAMESPACE: 'default' }).client;
  const logs = captureLogs('api');
  const agentSettings = new AgentSettings(options.db, env, logs.log);
  await agentSettings.start();
  const settings = liveSettings(env, agentSettings);
  const tokens = accessTokensFrom(settings, logs.log, options.db);
  await tokens.ring.start();
  const deps: ApiDeps = {
    log: logs.log,
    db: options.db,
    settings,
    agentSettings,
    tokens,
    temporal,
    temporalReachable: options.temporalReachable ?? (() => Promise.resolve(true)),
    ...(options.objectStore ? { objectStore: options.objectStore } : {}),
    ...(options.grants ? { grants: options.grants } : {}),
    ...(options.repoCredentials ? { repoCredentials: options.repoCredentials } : {}),
  };
  const app = createApiApp(deps);
  const serving: Serving = await serve(app, { host: '127.0.0.1', port: options.port ?? 0 });
  return {
    url: serving.url,
    deps,
    logs,
    routes: app.routes,
    close: async () => {
      agentSettings.stop();
      tokens.ring.stop();
      await serving.close(1000);
      await deps.events?.close();
      deps.mcpSessions?.closeAll();
    },
  };
}
