/**
 * The built gateway (`node dist/gateway/main.js`, what `npm run gateway`, `npm start` and the
 * image run) with no configuration serves the bundled example registry (docs/registry.md).
 * `npm test` builds before running the tests.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { freeLoopbackPort as freePort } from '../../ops/dev/free-port';
import { join } from 'node:path';

const ROOT = join(__dirname, '../..');
const MAIN = join(ROOT, 'dist', 'gateway', 'main.js');


async function startBuilt(env: Record<string, string>): Promise<{ child: ChildProcess; url: string; output: () => string }> {
  const port = await freePort();
  let output = '';
  const child = spawn(process.execPath, [MAIN], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, GATEWAY_HOST: '127.0.0.1', GATEWAY_PORT: String(port), DB_ENABLED: 'false', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr.on('data', (c: Buffer) => (output += c.toString()));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 15_000;
  for (;;) {
    try {
      if ((await fetch(`${url}/health`)).ok) break;
    } catch {
      if (Date.now() > deadline) throw new Error(`built gateway did not start:\n${output}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return { child, url, output: () => output };
}

async function stop(child: ChildProcess): Promise<void> {
  child.kill('SIGTERM');
  if (child.exitCode === null) await new Promise((r) => child.once('exit', r));
}

describe('e2e: built gateway with no configuration', function () {
  this.timeout(40_000);

  before(function () {
    assert.ok(existsSync(MAIN), 'dist/gateway/main.js is missing: run npm run build (npm test does)');
  });

  it('serves the bundled example registry when its credential is set', async () => {
    const gw = await startBuilt({ AGGREGATOR_API_KEY: 'example-key', USER_AUTH_ENABLED: 'false' });
    try {
      const health = (await (await fetch(`${gw.url}/health`)).json()) as { routes_configured: number };
      assert.equal(health.routes_configured, 4, 'three models and one alias');
      const models = (await (await fetch(`${gw.url}/v1/models`)).json()) as { data: Array<{ id: string }> };
      assert.deepEqual(models.data.map((m) => m.id).sort(), ['example-chat', 'example-chat-latest', 'example-chat-mini', 'example-embedding']);
    } finally {
      await stop(gw.child);
    }
    assert.match(gw.output(), /Registered 4 routes from .*config\/models\.yaml/);
  });

  it('skips every bundled model without the credential and says no models are available', async () => {
    const gw = await startBuilt({});
    try {
      const health = (await (await fetch(`${gw.url}/health`)).json()) as { status: string; routes_configured: number; database_configured: boolean };
      assert.deepEqual({ status: health.status, routes: health.routes_configured, db: health.database_configured }, { status: 'healthy', routes: 0, db: false });
    } finally {
      await stop(gw.child);
    }
    assert.match(gw.output(), /Skipping model example-chat: AGGREGATOR_API_KEY \(api_key\) is unset or blank/);
    assert.match(gw.output(), /No models are available/);
  });
});
