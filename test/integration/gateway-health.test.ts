/**
 * `GET /health` and `/health/ready` of the gateway (docs/errors-and-health.md) with a real database, with no
 * database, and with a configured database that is unreachable at startup.
 */
import assert from 'node:assert/strict';
import { createDb } from '../../lib/db';
import type { Db } from '../../lib/db';
import { freshDatabase, type TestDatabase } from '../support/db';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { captureLogs } from '../support/logs';

/** A registry of two models, one with three aliases: 5 names. */
const FIVE_NAMES = `models:
  - { id: a, name: A, provider: engine_a, base_url: http://127.0.0.1:9, aliases: [a1, a2, a3] }
  - { id: b, name: B, provider: engine_a, base_url: http://127.0.0.1:9 }
`;

function startGateway(db: Db | undefined, modelsYaml?: string): Promise<TestGateway> {
  return startTestGateway({ ...(db ? { db } : {}), ...(modelsYaml ? { modelsYaml } : {}) });
}

async function getJson(url: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(url);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe('gateway health', () => {
  let serving: TestGateway | undefined;
  let t: TestDatabase | undefined;
  afterEach(async () => {
    await serving?.close();
    serving = undefined;
    await t?.drop();
    t = undefined;
  });

  it('reports healthy with a connected database and both stores up', async () => {
    t = await freshDatabase();
    serving = await startGateway(t.db, FIVE_NAMES);
    const health = await getJson(`${serving.url}/health`);
    assert.equal(health.status, 200);
    assert.deepEqual(health.body, {
      status: 'healthy',
      routes_configured: 5,
      database_configured: true,
      database_connected: true,
      stores: {
        operational_store: { status: 'up', backend: 'postgres', cache: { backend: 'in_process', refresh_seconds: 5 } },
        log_store: { status: 'up', backend: 'postgres' },
      },
    });
    const ready = await getJson(`${serving.url}/health/ready`);
    assert.equal(ready.status, 200);
  });

  it('reports healthy without a database (configured false), and ready', async () => {
    serving = await startGateway(undefined);
    const health = await getJson(`${serving.url}/health`);
    assert.equal(health.status, 200);
    assert.equal(health.body.status, 'healthy');
    assert.equal(health.body.database_configured, false);
    assert.equal(health.body.database_connected, false);
    assert.deepEqual((health.body.stores as Record<string, unknown>).log_store, { status: 'disabled', backend: 'none' });
    assert.equal((await getJson(`${serving.url}/health/ready`)).status, 200);
  });

  it('answers 503 database_unavailable_at_startup when the configured database is unreachable', async () => {
    const logs = captureLogs();
    const unreachable = createDb({ url: 'postgres://gateway:gateway@127.0.0.1:1/gateway', acquireTimeoutMs: 500, log: logs.log });
    try {
      serving = await startGateway(unreachable);
      const health = await getJson(`${serving.url}/health`);
      assert.equal(health.status, 503);
      assert.equal(health.body.reason, 'database_unavailable_at_startup');
      assert.equal(health.body.database_configured, true);
      assert.equal(health.body.database_connected, false);
      const ready = await getJson(`${serving.url}/health/ready`);
      assert.equal(ready.status, 503);
      assert.ok(serving.logs.lines.some((l) => l.event === 'database_unavailable_at_startup'));
    } finally {
      await serving?.close();
      serving = undefined;
      await unreachable.destroy();
    }
  });

  it('renders unknown paths as OpenAI-shaped 404s with a request id', async () => {
    serving = await startGateway(undefined);
    const res = await fetch(`${serving.url}/nope`, { headers: { 'x-request-id': 'req-123' } });
    assert.equal(res.status, 404);
    assert.equal(res.headers.get('x-request-id'), 'req-123');
    assert.deepEqual(await res.json(), { error: { message: 'No route for GET /nope', type: 'not_found_error', code: 'not_found', param: null } });
  });
});
