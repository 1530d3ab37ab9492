/**
 * Starts a real gateway (Koa app on 127.0.0.1:0) from a models YAML and an environment, with
 * logs captured for assertions.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createGatewayListener } from '../../gateway/server';
import { gatewayContextDeps } from '../../gateway/deps';
import { registryBuildContext } from '../../gateway/registry';
import { RegistryHolder } from '../../gateway/registry/holder';
import { loadRegistry } from '../../gateway/registry/loader';
import { DatabaseState } from '../../gateway/store/database-state';
import type { GatewayContextDeps } from '../../gateway/surfaces/state';
import { serve, type Serving } from '../../lib/http/serve';
import { loadSettings } from '../../lib/settings';
import { captureLogs, type CapturedLogs } from './logs';

export interface TestGateway {
  url: string;
  logs: CapturedLogs;
  deps: GatewayContextDeps;
  close(): Promise<void>;
}

export interface TestGatewayOptions {
  /** Models file contents (`models:` list). */
  modelsYaml?: string;
  /** Environment: settings and `${NAME}` expansion. `USER_AUTH_ENABLED` defaults to false. */
  env?: Record<string, string>;
  database?: DatabaseState;
  rng?: () => number;
}

export async function startTestGateway(options: TestGatewayOptions = {}): Promise<TestGateway> {
  const env = { USER_AUTH_ENABLED: 'false', ...options.env };
  const logs = captureLogs('gateway', 'debug');
  const file = join(mkdtempSync(join(tmpdir(), 'gw-')), 'models.yaml');
  writeFileSync(file, options.modelsYaml ?? 'models: []\n');
  const registry = loadRegistry({ path: { path: file, source: 'env' }, log: logs.log, ...registryBuildContext(env) });
  const deps = gatewayContextDeps(loadSettings(env), new RegistryHolder(registry), options.rng);
  const database = options.database ?? new DatabaseState(null, logs.log);
  const serving: Serving = await serve(createGatewayListener({ log: logs.log, database, ...deps }), { host: '127.0.0.1', port: 0 });
  return {
    url: serving.url,
    logs,
    deps,
    close: async () => {
      await serving.close(1000);
      await deps.upstream.close();
    },
  };
}

/** A models file entry list for one chat model served by the given routes (YAML flow mappings). */
export function chatModelYaml(id: string, routes: string[], extra = ''): string {
  return `  - id: ${id}\n    name: ${id}\n${extra}    route:\n${routes.map((r) => `      - ${r}\n`).join('')}`;
}
