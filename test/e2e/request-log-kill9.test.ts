/**
 * kill -9 of the gateway loses no row of an answered request: the built gateway
 * (`node dist/gateway/main.js`) with a real PostgreSQL and a fake upstream serves a bounded load on
 * 127.0.0.1; once half of it has been answered the process gets SIGKILL, with rows of answered
 * requests not yet in PostgreSQL (the batch is larger than what one interval collects). A second
 * gateway on the same spool directory adopts the journal the first one left and replays it.
 *
 * Every 200 the client read, before the kill, while it was landing, and after the restart, has
 * exactly one row; no request has two. No response is excused: an answer's last bytes are held
 * until its row is in the journal (gateway/request-log/held-end.ts, docs/request-log.md
 * "Guarantees"), so whatever the client could read has its row on disk.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { freeLoopbackPort as freePort } from '../../ops/dev/free-port';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent } from 'undici';
import { freshDatabase, type TestDatabase } from '../support/db';
import { startFakeUpstream, type FakeUpstream } from '../support/fake-upstream';
import { waitFor } from '../support/wait';

const ROOT = join(__dirname, '../..');
const MAIN = join(ROOT, 'dist', 'gateway', 'main.js');
const REQUESTS = 3000;
const KILL_AFTER = 1500;
const CONCURRENCY = 32;
const AFTER_RESTART = 200;

interface Running {
  child: ChildProcess;
  url: string;
  output: () => string;
}

async function startGateway(env: Record<string, string>): Promise<Running> {
  const port = await freePort();
  let output = '';
  const child = spawn(process.execPath, [MAIN], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, GATEWAY_HOST: '127.0.0.1', GATEWAY_PORT: String(port), USER_AUTH_ENABLED: 'false', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr.on('data', (c: Buffer) => (output += c.toString()));
  const url = `http://127.0.0.1:${port}`;
  await waitFor(async () => {
    if (child.exitCode !== null) assert.fail(`the gateway exited:\n${output}`);
    return fetch(`${url}/health`).then((r) => r.ok, () => false);
  }, `the built gateway on ${url}`, 20_000);
  return { child, url, output: () => output };
}

function exited(child: ChildProcess): Promise<void> {
  return child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise((r) => child.once('exit', () => r()));
}

describe('e2e: kill -9 of the gateway under load', function () {
  this.timeout(60_000);
  let t: TestDatabase;
  let upstream: FakeUpstream;
  let running: Running | undefined;
  // Fresh connections per test: the first gateway's sockets die with it.
  const dispatcher = new Agent({ connections: CONCURRENCY });

  before(async function () {
    assert.ok(existsSync(MAIN), 'dist/gateway/main.js is missing: run npm run build (npm test does)');
    t = await freshDatabase();
    upstream = await startFakeUpstream();
  });
  after(async () => {
    running?.child.kill('SIGKILL');
    await upstream?.close();
    await dispatcher.close();
    await t?.drop();
  });

  it('stores exactly one row for every request answered 200, after the process was killed mid-load and started again', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rl-kill9-'));
    const spool = join(dir, 'spool');
    const models = join(dir, 'models.yaml');
    writeFileSync(models, `models:\n  - { id: m, name: M, provider: generic_compat, base_url: "${upstream.url}", api_key: k }\n`);
    // Batches of 1,000 and a 60 s interval: at the kill, the rows since the last full batch are
    // only in the journal (and the stored ones are still in it too: its file is never emptied).
    const env = { DATABASE_URL: t.url, MODELS_CONFIG_PATH: models, REQUEST_LOG_SPOOL_DIR: spool, REQUEST_LOG_BATCH_SIZE: '1000', REQUEST_LOG_FLUSH_INTERVAL_MS: '60000' };
    running = await startGateway(env);
    const first = running;

    const ok: string[] = [];
    let next = 0;
    let killed = false;
    const send = async (id: string, url: string): Promise<number | undefined> => {
      try {
        const res = await fetch(`${url}/v1/chat/completions`, {
          method: 'POST', headers: { 'content-type': 'application/json', 'x-request-id': id },
          body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: `question ${id}` }] }),
          dispatcher,
        } as unknown as RequestInit); // undici's own Agent: Node's fetch types name undici-types' Dispatcher
        await res.arrayBuffer();
        return res.status;
      } catch {
        return undefined; // in flight when the process died
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
      while (next < REQUESTS && !killed) {
        const id = `load-${next++}`;
        if ((await send(id, first.url)) !== 200) continue;
        ok.push(id); // also those read after the kill was sent: they were answered
        if (ok.length === KILL_AFTER) {
          killed = true;
          first.child.kill('SIGKILL');
        }
      }
    }));
    await exited(first.child);
    assert.equal(first.child.signalCode, 'SIGKILL');
    const beforeRestart = Number((await t.db('api_logs').count<Array<{ n: string }>>('* as n'))[0]!.n);
    assert.ok(beforeRestart < ok.length, `rows of answered requests were missing from PostgreSQL at the kill (${beforeRestart} of ${ok.length})`);
    assert.ok(readdirSync(spool).some((f) => f.startsWith('journal-')), 'the dead process left its journal');

    running = await startGateway(env);
    for (let i = 0; i < AFTER_RESTART; i += 1) {
      const id = `after-${i}`;
      if ((await send(id, running.url)) === 200) ok.push(id);
    }
    running.child.kill('SIGTERM'); // a clean stop writes what is queued
    await exited(running.child);

    const rows = await t.db('api_logs').select('request_id').count<Array<{ request_id: string; n: string }>>('* as n').groupBy('request_id');
    const perId = new Map(rows.map((r) => [r.request_id, Number(r.n)]));
    const missing = ok.filter((id) => !perId.has(id));
    assert.deepEqual(missing, [], `every 200 has its row (${missing.length} of ${ok.length} missing)`);
    assert.deepEqual(rows.filter((r) => Number(r.n) !== 1), [], 'no request has two rows');
    assert.ok(ok.length >= KILL_AFTER + AFTER_RESTART, `${ok.length} answers counted`);
  });
});
