/**
 * `npm run bench:gateway:faults`: the routing core under faults. Three upstreams serve one model
 * (equal weights): one healthy, one failing every second request with a 500, one that never
 * answers (the gateway's first-byte timeout, set short here, ends each attempt). A baseline
 * with three healthy upstreams runs first. Reports the client success rate (target ≥ 99.9 %
 * while a healthy route exists) and the p99 the faults add over the baseline.
 *
 * The gateway runs in this process (assembled as `gateway/main.ts` does, from `tsx` sources):
 * the figures are about resilience, not overhead, and are not comparable with `bench:gateway`.
 * Environment: `BENCH_QUICK=1` (a short smoke run), `BENCH_NO_RESULTS=1` (do not append a row
 * to bench/RESULTS.md).
 */
import { appendFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Pool } from 'undici';
import { assembleGateway } from '../../gateway/assemble';
import { createLogger } from '../../lib/logger';
import { serve } from '../../lib/http/serve';
import { loadSettings } from '../../lib/settings';
import { percentiles, type Percentiles } from './load';
import { startBenchUpstream, type BenchUpstream, type BenchUpstreamOptions } from './upstream';

const QUICK = process.env.BENCH_QUICK === '1';
const PLAN = QUICK ? { requests: 600, connections: 8, firstByteTimeoutS: 1 } : { requests: 100_000, connections: 32, firstByteTimeoutS: 2 };
const BODY = JSON.stringify({ model: 'bench-model', messages: [{ role: 'user', content: 'Hello' }], max_tokens: 16 });

interface Outcome {
  success: number;
  latency: Percentiles;
  statuses: Record<string, number>;
  /** Completed requests per second over the run. */
  rps: number;
}

async function run(faults: Array<BenchUpstreamOptions['fault']>, requests = PLAN.requests): Promise<Outcome> {
  const upstreams: BenchUpstream[] = [];
  for (const fault of faults) upstreams.push(await startBenchUpstream({ port: 0, ...(fault ? { fault } : {}) }));
  const dir = mkdtempSync(join(tmpdir(), 'bench-faults-'));
  const models = join(dir, 'models.yaml');
  writeFileSync(models, `models:\n  - id: bench-model\n    name: bench-model\n    route:\n${upstreams.map((u, i) => `      - { kind: generic_compat, base_url: "http://127.0.0.1:${u.port}/v1", provider: up-${i} }\n`).join('')}`);
  const env = {
    MODELS_CONFIG_PATH: models, USER_AUTH_ENABLED: 'false', DB_ENABLED: 'false', LOG_LEVEL: 'error',
    UPSTREAM_FIRST_BYTE_TIMEOUT_SECONDS: String(PLAN.firstByteTimeoutS), REQUEST_LOG_SPOOL_DIR: join(dir, 'spool'),
  };
  const log = createLogger({ name: 'bench-faults', level: 'error' });
  const assembly = assembleGateway({ settings: loadSettings(env), env, cwd: process.cwd(), log, db: null });
  await assembly.start();
  const serving = await serve(assembly.listener, { host: '127.0.0.1', port: 0 });
  const pool = new Pool(serving.url, { connections: PLAN.connections });
  const samples: bigint[] = [];
  const statuses: Record<string, number> = {};
  let next = 0;
  let ok = 0;
  const worker = async (): Promise<void> => {
    while (next < requests) {
      next += 1;
      const start = process.hrtime.bigint();
      let status = 'error';
      try {
        const res = await pool.request({ method: 'POST', path: '/v1/chat/completions', headers: { 'content-type': 'application/json' }, body: BODY });
        await res.body.text();
        status = String(res.statusCode);
        if (res.statusCode === 200) ok += 1;
      } catch {
        // counted as `error`
      }
      samples.push(process.hrtime.bigint() - start);
      statuses[status] = (statuses[status] ?? 0) + 1;
    }
  };
  const started = process.hrtime.bigint();
  let elapsedS: number;
  try {
    await Promise.all(Array.from({ length: PLAN.connections }, () => worker()));
    elapsedS = Number(process.hrtime.bigint() - started) / 1e9;
  } finally {
    await pool.close();
    await serving.close(1000);
    await assembly.stop();
    for (const u of upstreams) await u.close();
  }
  return { success: ok / samples.length, latency: percentiles(samples), statuses, rps: samples.length / elapsedS };
}

async function main(): Promise<void> {
  console.log(`bench faults: ${PLAN.requests} requests at c=${PLAN.connections}${QUICK ? ' (quick smoke run: figures not comparable)' : ''}`);
  // Warm-up (JIT, pools), discarded: the baseline would otherwise be measured colder than the faulted run.
  await run([undefined, undefined, undefined], Math.min(PLAN.requests, 5000));
  const baseline = await run([undefined, undefined, undefined]);
  console.log(`bench faults: baseline (3 healthy): success ${(baseline.success * 100).toFixed(3)} %, ${Math.round(baseline.rps)} req/s, p50 ${baseline.latency.p50.toFixed(2)} ms, p99 ${baseline.latency.p99.toFixed(2)} ms`);
  const faulted = await run([undefined, 'fail_half', 'stall']);
  const added = faulted.latency.p99 - baseline.latency.p99;
  const verdict = faulted.success >= 0.999 ? 'meets' : 'MISSES';
  const line = `| ${new Date().toISOString()} | faults (healthy, fail half, stall; first-byte timeout ${PLAN.firstByteTimeoutS} s) | ${PLAN.requests} @ c=${PLAN.connections}${QUICK ? ' quick' : ''} | `
    + `${(faulted.success * 100).toFixed(3)} % (${verdict} ≥ 99.9 %) | p99 ${faulted.latency.p99.toFixed(1)} ms, ${added >= 0 ? '+' : ''}${added.toFixed(1)} ms vs baseline | ${Math.round(faulted.rps)} vs ${Math.round(baseline.rps)} req/s baseline | ${JSON.stringify(faulted.statuses)} |`;
  console.log(`bench faults: with faults: success ${(faulted.success * 100).toFixed(3)} % (${verdict} the 99.9 % target), ${Math.round(faulted.rps)} req/s, p50 ${faulted.latency.p50.toFixed(2)} ms, p99 ${faulted.latency.p99.toFixed(2)} ms (${added >= 0 ? '+' : ''}${added.toFixed(2)} ms), statuses ${JSON.stringify(faulted.statuses)}`);
  if (process.env.BENCH_NO_RESULTS !== '1') {
    appendFileSync(resolve(__dirname, '..', 'RESULTS.md'), `\n### Routing under faults\n\n| When | Scenario | Requests | Client success | Added p99 | Throughput (faults vs 3 healthy) | Statuses |\n|---|---|---|---|---|---|---|\n${line}\n`);
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
