/**
 * docker-compose.yml parses, has the production services, and the application services name
 * only variables the settings schema knows (in `environment:` and in `${…}` interpolations).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { settingsVariableNames } from '../../lib/settings';

interface Service {
  networks?: Record<string, { ipv4_address?: string }>;
  image?: string;
  build?: unknown;
  environment?: Record<string, unknown>;
  command?: string[];
}

const text = readFileSync(join(__dirname, '../../docker-compose.yml'), 'utf8');
const compose = parse(text, { merge: true }) as { services: Record<string, Service> };
const known = new Set(settingsVariableNames);
/** Variables only the third-party containers use. */
const infraOnly = new Set(['POSTGRES_PASSWORD']);

describe('docker-compose.yml', () => {
  it('has every production service', () => {
    for (const name of ['postgres', 'temporal', 'temporal-ui', 'object-store', 'migrate', 'gateway', 'api', 'control-worker', 'host-runner']) {
      assert.ok(compose.services[name], `service ${name}`);
    }
  });

  it('runs each application process from the built image', () => {
    const commands = Object.fromEntries(Object.entries(compose.services).filter(([, s]) => s.build).map(([n, s]) => [n, s.command?.at(-1)]));
    assert.deepEqual(commands, {
      migrate: 'up', gateway: 'dist/gateway/main.js', api: 'dist/api/main.js',
      'control-worker': 'dist/workers/control.js', 'host-runner': 'dist/workers/host.js',
    });
  });

  it('sets on application services only variables the settings schema knows', () => {
    const appServices = Object.entries(compose.services).filter(([, s]) => s.build);
    assert.ok(appServices.length >= 5);
    for (const [name, service] of appServices) {
      for (const variable of Object.keys(service.environment ?? {})) {
        assert.ok(known.has(variable), `${name} sets ${variable}, unknown to lib/settings.ts`);
      }
    }
  });

  it('interpolates only known variables (or the database password used to build DATABASE_URL)', () => {
    const interpolated = [...text.matchAll(/\$\{([A-Z0-9_]+)/g)].map((m) => m[1]!);
    assert.ok(interpolated.length > 0);
    for (const variable of interpolated) {
      assert.ok(known.has(variable) || infraOnly.has(variable), `\${${variable}} is unknown to lib/settings.ts`);
    }
  });

  it('serves the agent API on the gateway\'s origin, the api trusting only the gateway\'s fixed address (docs/one-origin.md)', () => {
    const gateway = compose.services.gateway!;
    const api = compose.services.api!;
    assert.equal(gateway.environment?.GATEWAY_AGENT_API_URL, `http://api:${String(api.environment?.API_PORT)}`);
    assert.equal(api.environment?.TRUST_PROXY_HEADERS, '1');
    assert.equal(api.environment?.TRUSTED_PROXIES, gateway.networks?.default?.ipv4_address);
  });

  it('gives the host runner the Docker socket', () => {
    const host = compose.services['host-runner']!;
    assert.equal(host.environment?.DOCKER_SOCKET_PATH, '/var/run/docker.sock');
    assert.ok(JSON.stringify(host).includes('/var/run/docker.sock:/var/run/docker.sock'));
  });
});
