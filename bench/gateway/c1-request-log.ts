/**
 * `npm run bench:gateway:c1-log`: where the key + request-log row's c=1 p99 comes from. Measures
 * c=1 latency through our gateway (API key required) and directly, alternating, in rounds, while
 * request-log inserts happen one of three ways (`--inserts`):
 * - `gateway` (default): the gateway writes its request log (`--batch-size`, its
 *   `REQUEST_LOG_BATCH_SIZE`);
 * - `external`: the gateway writes none; a separate process pinned to core 1 writes the request
 *   log's own statement (`postgresSink`) with `--batch-size` bench-like rows every `--interval-ms`;
 * - `none`: nobody writes.
 * `--db-core` pins PostgreSQL (default 0, as in `bench:gateway`). Load generator and fake upstream
 * on core 0, the gateway on core 1. Needs the dev stack's PostgreSQL; targets 127.0.0.1 only; every
 * child is stopped on exit. Findings: docs/gateway-performance.md ("What the request log costs").
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { createDb } from '../../lib/db';
import { serializeRows } from '../../gateway/request-log/batch';
import { postgresSink } from '../../gateway/request-log/postgres-sink';
import type { ApiLogRow } from '../../gateway/request-log/row';
import { directTarget, prepareBenchIdentity, startOurGateway, startUpstreamProcess } from './gateways';
import { latencyC1 } from './load';
import { installCleanupHooks, pinProcessesNamed, pinSelf, startPinned } from './processes';

const INSERTS = ['gateway', 'external', 'none'] as const;
type Inserts = (typeof INSERTS)[number];

/** A row shaped like the ones the gateway logs for the bench's requests (about 870 bytes of JSON). */
function benchRow(): ApiLogRow {
  return {
    log_id: randomUUID(), created_at: new Date().toISOString(), request_id: randomUUID(), user_id: 1, api_key_id: 1,
    model: 'bench-model', provider: 'generic_compat', endpoint_id: 'ep_bench', surface: 'chat', status: 200, stream: false,
    latency_ms: 1, first_token_ms: null, prompt_tokens: 12, completion_tokens: 64, cache_read_tokens: 4, num_user_turns: 1,
    num_tool_calls: 0, cost_usd: null, error_code: null, synthetic: false, user_message_chars: 5, user_message_entropy: 1.9219,
    user_message_hash: 'c8e2c1437abb87b6', user_message_text: null,
    metadata: {
      via: 'api_key',
      client: { reason: 'peer_not_routable', source: 'socket', peer_ip: '127.0.0.1', resolved: false, client_ip: 'unknown' },
      routing: { base_url: 'http://127.0.0.1:40000/v1', provider: 'generic_compat', endpoint_id: 'ep_bench' },
    },
  };
}

/** `--inserter`: the external writer (database from `BENCH_INSERTER_DATABASE_URL`); runs until stdin closes or `seconds` pass. */
async function inserter(databaseUrl: string, batchSize: number, intervalMs: number, seconds: number): Promise<void> {
  const db = createDb({ url: databaseUrl, poolMax: 1, applicationName: 'bench-inserter' });
  const sink = postgresSink(db);
  let open = true;
  process.stdin.once('close', () => { open = false; });
  process.stdin.resume();
  const until = Date.now() + seconds * 1000;
  let batches = 0;
  try {
    while (open && Date.now() < until) {
      const started = Date.now();
      await sink.write(await serializeRows(Array.from({ length: batchSize }, benchRow)));
      batches += 1;
      const wait = intervalMs - (Date.now() - started);
      if (wait > 0) await new Promise((done) => setTimeout(done, wait));
    }
  } finally {
    await db.destroy();
    process.stderr.write(`bench inserter: ${batches} batches of ${batchSize} rows\n`);
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      rounds: { type: 'string', default: '3' }, count: { type: 'string', default: '3000' },
      inserts: { type: 'string', default: 'gateway' }, 'batch-size': { type: 'string', default: '500' },
      'interval-ms': { type: 'string', default: '140' }, 'db-core': { type: 'string', default: '0' },
      inserter: { type: 'boolean', default: false }, seconds: { type: 'string', default: '600' },
    },
  });
  const batchSize = Number(values['batch-size']);
  const intervalMs = Number(values['interval-ms']);
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 5000) throw new Error('--batch-size: an integer from 1 to 5000');
  if (!(intervalMs >= 1)) throw new Error('--interval-ms: at least 1');
  if (values.inserter) {
    const url = process.env.BENCH_INSERTER_DATABASE_URL;
    if (!url) throw new Error('--inserter needs BENCH_INSERTER_DATABASE_URL');
    await inserter(url, batchSize, intervalMs, Number(values.seconds));
    return;
  }
  const inserts = values.inserts as Inserts;
  if (!INSERTS.includes(inserts)) throw new Error(`--inserts: one of ${INSERTS.join(', ')}`);
  const dbCore = Number(values['db-core']);
  if (dbCore !== 0 && dbCore !== 1) throw new Error('--db-core: 0 or 1');
  const rounds = Number(values.rounds);
  const count = Number(values.count);
  if (!Number.isInteger(rounds) || rounds < 1) throw new Error('--rounds: a positive integer');
  if (!Number.isInteger(count) || count < 100) throw new Error('--count: an integer of at least 100');

  installCleanupHooks();
  pinSelf(0);
  if (pinProcessesNamed('postgres', dbCore) === 0) throw new Error('no PostgreSQL process runs: start the dev stack (npm start, or ops/dev/bootstrap.sh)');
  const root = resolve(__dirname, '..', '..');
  const workDir = join(root, '.data', 'bench', 'c1-log');
  mkdirSync(workDir, { recursive: true });
  const { upstream, port: upstreamPort } = await startUpstreamProcess(root, 0);
  const identity = { ...(await prepareBenchIdentity()), requestLog: inserts === 'gateway' };
  const started = await startOurGateway({
    root, core: 1, upstreamPort, logLevel: 'warn', workDir, identity, env: { REQUEST_LOG_BATCH_SIZE: String(batchSize) },
  });
  if (!started.ok) throw new Error(`our gateway: ${started.reason}`);
  try {
    if (inserts === 'external') {
      startPinned({
        core: 1, command: process.execPath, cwd: root, env: { ...process.env, BENCH_INSERTER_DATABASE_URL: identity.databaseUrl },
        args: ['--import', 'tsx', __filename, '--inserter', '--batch-size', String(batchSize), '--interval-ms', String(intervalMs)],
      });
    }
    const direct = directTarget(upstreamPort);
    console.log(`c=1, ${count} requests a round; inserts: ${inserts}${inserts === 'none' ? '' : `, ${batchSize} rows a batch${inserts === 'external' ? ` every ${intervalMs} ms` : ''}`}; PostgreSQL on core ${dbCore}`);
    await latencyC1(direct, { requests: 3000, ms: 2000 }, 1);
    for (let round = 1; round <= rounds; round += 1) {
      const d = await latencyC1(direct, { requests: 200, ms: 300 }, count);
      const g = await latencyC1(started.gateway.target, { requests: 500, ms: 3000 }, count);
      const ms = (v: number): string => v.toFixed(3);
      console.log(`round ${round}: direct p50 ${ms(d.p50)} p99 ${ms(d.p99)} | gateway p50 ${ms(g.p50)} p99 ${ms(g.p99)} | added p50 ${ms(g.p50 - d.p50)} p99 ${ms(g.p99 - d.p99)}`);
    }
  } finally {
    await started.gateway.stop();
    await upstream.stop();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(`bench failed: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  },
);
