/**
 * Starts a real gateway (Koa app on 127.0.0.1:0) from a models YAML and an environment, with
 * logs captured for assertions.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { GatewayDeps } from '../../gateway/deps';
import { assembleGateway } from '../../gateway/assemble';
import type { Db } from '../../lib/db';
import type { RouteEntry } from '../../lib/http/route-access';
import { serve, type Serving } from '../../lib/http/serve';
import { loadSettings } from '../../lib/settings';
import { captureLogs, type CapturedLogs } from './logs';

export interface TestGateway {
  url: string;
  logs: CapturedLogs;
  deps: GatewayDeps;
  /** Every route the gateway serves and what it requires. */
  routes: readonly RouteEntry[];
  close(): Promise<void>;
}

export interface TestGatewayOptions {
  /** Models file contents (`models:` list). */
  modelsYaml?: string;
  /** Routing file contents (docs/routing-file.md); written to a file named by `ROUTING_CONFIG_PATH`. Default: the bundled file. */
  routingYaml?: string;
  /** Environment: settings and `${NAME}` expansion. `USER_AUTH_ENABLED` defaults to false. */
  env?: Record<string, string>;
  /** The database (the caller owns the pool); none by default. */
  db?: Db;
  rng?: () => number;
  /** Clock of the routing core (breaker cooldowns, pins). */
  now?: () => number;
  /** Hosts exempt from the outbound concurrency limit (default: the production list, which exempts 127.0.0.1). */
  concurrencyExemptHosts?: readonly string[];
}

/** Starts a gateway through the same assembly as `gateway/main.ts`, on 127.0.0.1:0. */
export async function startTestGateway(options: TestGatewayOptions = {}): Promise<TestGateway> {
  const dir = mkdtempSync(join(tmpdir(), 'gw-'));
  const file = join(dir, 'models.yaml');
  writeFileSync(file, options.modelsYaml ?? 'models: []\n');
  // Each test gateway spools request-log overflow in its own directory (never replayed into another test's database).
  const routing: Record<string, string> = {};
  if (options.routingYaml !== undefined) {
    routing.ROUTING_CONFIG_PATH = join(dir, 'routing.yaml');
    writeFileSync(routing.ROUTING_CONFIG_PATH, options.routingYaml);
  }
  const env = { USER_AUTH_ENABLED: 'false', REQUEST_LOG_SPOOL_DIR: join(dir, 'request-log-spool'), ...options.env, ...routing, MODELS_CONFIG_PATH: file };
  const logs = captureLogs('gateway', 'debug');
  const assembly = assembleGateway({
    settings: loadSettings(env), env, cwd: process.cwd(), log: logs.log, db: options.db ?? null,
    ...(options.rng ? { rng: options.rng } : {}),
    ...(options.now ? { now: options.now } : {}),
    ...(options.concurrencyExemptHosts ? { concurrencyExemptHosts: options.concurrencyExemptHosts } : {}),
  });
  await assembly.start();
  let serving: Serving;
  try {
    serving = await serve(assembly.listener, { host: '127.0.0.1', port: 0 });
  } catch (err) {
    await assembly.stop();
    throw err;
  }
  return {
    url: serving.url,
    logs,
    deps: assembly.deps,
    routes: assembly.listener.routes,
    close: async () => {
      await serving.close(1000);
      await assembly.stop();
    },
  };
}

/** A models file entry list for one chat model served by the given routes (YAML flow mappings). */
export function chatModelYaml(id: string, routes: string[], extra = ''): string {
  return `  - id: ${id}\n    name: ${id}\n${extra}    route:\n${routes.map((r) => `      - ${r}\n`).join('')}`;
}
