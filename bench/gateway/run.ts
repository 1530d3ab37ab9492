/**
 * `npm run bench:gateway`: the gateway's overhead against a fake upstream, next to Portkey's
 * open-source gateway, in one run.
 *
 * Layout on a 2-core machine: this runner (the load generator) and the fake upstream share core 0;
 * the gateway under test runs alone on core 1, one gateway at a time. Every phase has a bounded
 * duration and every child process is stopped on exit, on an error and on SIGINT/SIGTERM.
 *
 * Environment: `BENCH_QUICK=1` shortens every phase (a smoke run; figures are not comparable),
 * `BENCH_SKIP_BUILD=1` skips `npm run build`, `BENCH_NO_RESULTS=1` does not append to RESULTS.md,
 * `BENCH_GUEST_HALT_POLL_NS=<ns>` sets the VM guest's halt polling for the run (see idle.ts).
 * `BENCH_MESSAGES_ROUNDS=N` measures only the chat and messages rows, alternated N times (issue 19's ratio).
 */
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { directTarget, prepareBenchIdentity, startBareProxy, startOurGateway, startPortkey, startUpstreamProcess, PORTKEY_VERSION, type GatewayStart } from './gateways';
import { latencyC1, requestsPerSecond, streamsPerSecond, ttfbC1, type Target } from './load';
import { cpuSnapshot, cpuUse, waitForQuiet } from './cpu';
import { applyHaltPollFromEnv } from './idle';
import { installCleanupHooks, pinProcessesNamed, pinSelf, runCommand } from './processes';
import { appendResults, renderTable, runInfo, TARGETS, type Measured, type Row } from './report';
import { STREAM_CHUNKS } from './upstream';

const LOAD_CORE = 0;
const GATEWAY_CORE = 1;
const QUICK = process.env.BENCH_QUICK === '1';

const PLAN = QUICK
  ? {
    prewarm: { requests: 500, ms: 500 }, warmup: { requests: 100, ms: 300 }, count: 500,
    streamWarmup: { requests: 20, ms: 100 }, streamCount: 100, connections: 64, seconds: 2, warmupSeconds: 0.5,
  }
  : {
    // c=1 tails settle only after a few seconds of traffic (JIT tiering, young-generation sizing
    // in both processes): warm-ups are by time, with a request floor.
    prewarm: { requests: 5000, ms: 3000 }, warmup: { requests: 500, ms: 3000 }, count: 3000,
    streamWarmup: { requests: 100, ms: 1000 }, streamCount: 1000, connections: 64, seconds: 10, warmupSeconds: 2,
  };
const during = (w: { requests: number; ms: number }): string => `≥ ${w.ms / 1000} s and ≥ ${w.requests} requests`;

const DIRECT = 'direct (fake upstream)';
/** Other processes may use at most this much of one core when a system's measurement starts… */
const QUIET_PCT = 15;
/** …or the runner waits up to this long for them to finish. */
const QUIET_WAIT_MS = 30_000;
/** A phase during which other processes used this much of one core is flagged in the notes. */
const NOISY_PCT = 10;
const notes: string[] = [];

async function measure(name: string, target: Target): Promise<Measured> {
  const step = (what: string): void => console.log(`bench: ${name}: ${what}`);
  const others = await waitForQuiet(QUIET_PCT, QUIET_WAIT_MS);
  if (others >= QUIET_PCT) {
    step(`other processes still use ${Math.round(others)} % of a core after ${QUIET_WAIT_MS / 1000} s; measuring anyway`);
    notes.push(`${name}: measured while other processes used ${Math.round(others)} % of a core (machine not quiet).`);
  }
  const c1Start = cpuSnapshot();
  step(`c=1 latency, ${PLAN.count} requests after a warm-up of ${during(PLAN.warmup)}`);
  const latency = await latencyC1(target, PLAN.warmup, PLAN.count);
  step(`c=1 stream time to first byte, ${PLAN.streamCount} streams after a warm-up of ${during(PLAN.streamWarmup)}`);
  const ttfb = await ttfbC1(target, PLAN.streamWarmup, PLAN.streamCount);
  const c1Others = cpuUse(c1Start, cpuSnapshot()).others;
  step(`c=${PLAN.connections} requests/s, ${PLAN.seconds} s after ${PLAN.warmupSeconds} s warm-up`);
  const rps = await requestsPerSecond(target, PLAN.connections, PLAN.seconds, PLAN.warmupSeconds);
  step(`c=${PLAN.connections} streams/s, ${PLAN.seconds} s after ${PLAN.warmupSeconds} s warm-up`);
  const streams = await streamsPerSecond(target, PLAN.connections, PLAN.seconds, PLAN.warmupSeconds);
  const noisy = [['c=1', c1Others], ['c=64 requests', rps.cpu.others], ['c=64 streams', streams.cpu.others]] as const;
  const loud = noisy.filter(([, pct]) => pct >= NOISY_PCT).map(([phase, pct]) => `${phase} ${Math.round(pct)} %`);
  if (loud.length > 0) notes.push(`${name}: other processes used CPU during ${loud.join(', ')} (of one core): figures disturbed.`);
  return { latency, ttfb, rps, streams };
}

/** Starts a gateway, measures it if it came up, and always stops it. */
async function measureGateway(name: string, start: () => Promise<GatewayStart>): Promise<Row> {
  console.log(`bench: starting ${name}`);
  let started: GatewayStart;
  try {
    started = await start();
  } catch (err) {
    // One system that cannot be set up (e.g. PostgreSQL down for the key rows) costs its row, not the run.
    started = { ok: false, reason: `could not start: ${err instanceof Error ? err.message : String(err)}` };
  }
  if (!started.ok) {
    console.log(`bench: ${name}: ${started.reason}`);
    return { name, result: { unavailable: started.reason } };
  }
  try {
    return { name, result: await measure(name, started.gateway.target) };
  } catch (err) {
    const reason = `failed: ${err instanceof Error ? err.message : String(err)}`;
    console.log(`bench: ${name}: ${reason}`);
    return { name, result: { unavailable: reason } };
  } finally {
    await started.gateway.stop();
  }
}

const CHAT_ROW = 'ours (LOG_LEVEL=warn)';
const MESSAGES_ROW = 'ours, /v1/messages (LOG_LEVEL=warn)';
/** The messages surface's target: at least this share of the chat surface's req/s and streams/s in the same run. */
const MESSAGES_TARGET_RATIO = 0.9;

/** The messages row against the chat row (issue 19: ≥ 0.9× in the same run). */
function messagesRatio(rows: readonly Row[]): string[] {
  const chat = rows.find((r) => r.name === CHAT_ROW)?.result;
  const messages = rows.find((r) => r.name === MESSAGES_ROW)?.result;
  if (!chat || !messages || 'unavailable' in chat || 'unavailable' in messages) return ['messages vs chat: not measured (a row is unavailable).'];
  const ratio = (a: number, b: number): string => (b > 0 ? (a / b).toFixed(2) : 'n/a');
  const rps = ratio(messages.rps.perSecond, chat.rps.perSecond);
  const streams = ratio(messages.streams.perSecond, chat.streams.perSecond);
  const line = `messages vs chat (same run, LOG_LEVEL=warn): ${rps}× req/s, ${streams}× streams/s (target ≥ ${MESSAGES_TARGET_RATIO}×).`;
  console.log(`bench: ${line}`);
  return [line];
}

/**
 * `BENCH_MESSAGES_ROUNDS=N`: the chat and messages rows alone, alternated N times (chat, messages,
 * chat, …) so both see the same machine; the ratio is of the rounds' sums.
 */
function messagesRoundsRatio(rows: readonly Row[]): string[] {
  const sum = (prefix: string, pick: (r: Measured) => number): number => rows
    .filter((r) => r.name.startsWith(prefix) && !('unavailable' in r.result))
    .reduce((total, r) => total + pick(r.result as Measured), 0);
  const ratio = (pick: (r: Measured) => number): string => {
    const chat = sum(`${CHAT_ROW} round`, pick);
    return chat > 0 ? (sum(`${MESSAGES_ROW} round`, pick) / chat).toFixed(2) : 'n/a';
  };
  const line = `messages vs chat (${rows.length - 1} rows alternated, ratio of sums, LOG_LEVEL=warn): ${ratio((r) => r.rps.perSecond)}× req/s, ${ratio((r) => r.streams.perSecond)}× streams/s (target ≥ ${MESSAGES_TARGET_RATIO}×).`;
  console.log(`bench: ${line}`);
  return [line];
}

async function main(): Promise<void> {
  installCleanupHooks();
  const haltPoll = applyHaltPollFromEnv();
  if (haltPoll) {
    console.log(`bench: ${haltPoll}`);
    notes.push(haltPoll);
  }
  pinSelf(LOAD_CORE);
  const pinnedDb = pinProcessesNamed('postgres', LOAD_CORE);
  if (pinnedDb > 0) console.log(`bench: ${pinnedDb} PostgreSQL processes pinned to core ${LOAD_CORE} for the run`);
  const root = resolve(__dirname, '..', '..');
  const workDir = join(root, '.data', 'bench');
  mkdirSync(workDir, { recursive: true });

  if (process.env.BENCH_SKIP_BUILD !== '1') {
    console.log('bench: npm run build');
    const code = await runCommand('npm', ['run', 'build', '--silent'], root, 300_000);
    if (code !== 0) {
      console.log(`bench: npm run build exited ${code}; measuring whatever dist/ holds`);
      notes.push(`\`npm run build\` exited ${code} (tsc still emits): our gateway ran from a partly stale dist/`);
    }
  }

  const { upstream, port: upstreamPort } = await startUpstreamProcess(root, LOAD_CORE);
  console.log(`bench: fake upstream on 127.0.0.1:${upstreamPort} (core ${LOAD_CORE})`);

  const rows: Row[] = [];
  try {
    // JIT-warm the runner's own client code and the upstream first, so the direct baseline is not
    // measured colder than the gateways (which would understate their added latency).
    console.log(`bench: pre-warming the load generator and upstream (${during(PLAN.prewarm)})`);
    await latencyC1(directTarget(upstreamPort), PLAN.prewarm, 1);
    await ttfbC1(directTarget(upstreamPort), { requests: PLAN.prewarm.requests / 10, ms: PLAN.prewarm.ms / 3 }, 1);
    rows.push({ name: DIRECT, result: await measure(DIRECT, directTarget(upstreamPort)) });
    const messagesRounds = Number(process.env.BENCH_MESSAGES_ROUNDS ?? 0);
    for (let round = 1; round <= messagesRounds; round += 1) {
      rows.push(await measureGateway(`${CHAT_ROW} round ${round}`, () => startOurGateway({ root, core: GATEWAY_CORE, upstreamPort, logLevel: 'warn', workDir })));
      rows.push(await measureGateway(`${MESSAGES_ROW} round ${round}`, () => startOurGateway({ root, core: GATEWAY_CORE, upstreamPort, logLevel: 'warn', workDir, surface: 'messages' })));
    }
    if (messagesRounds > 0) notes.push(...messagesRoundsRatio(rows));
    else await allRows();
  } finally {
    await upstream.stop();
  }

  async function allRows(): Promise<void> {
    rows.push(await measureGateway('bare Node proxy (floor)', () => startBareProxy(root, GATEWAY_CORE, upstreamPort, workDir)));
    for (const logLevel of ['info', 'warn'] as const) {
      rows.push(await measureGateway(`ours (LOG_LEVEL=${logLevel})`, () => startOurGateway({
        root, core: GATEWAY_CORE, upstreamPort, logLevel, workDir,
      })));
    }
    // The messages surface next to the chat row it is compared with (same settings, same run).
    rows.push(await measureGateway(MESSAGES_ROW, () => startOurGateway({ root, core: GATEWAY_CORE, upstreamPort, logLevel: 'warn', workDir, surface: 'messages' })));
    notes.push(...messagesRatio(rows));
    for (const requestLog of [false, true]) {
      rows.push(await measureGateway(`ours (API key${requestLog ? ' + request log' : ''}, LOG_LEVEL=warn)`, async () => {
        const identity = { ...(await prepareBenchIdentity()), requestLog };
        return startOurGateway({ root, core: GATEWAY_CORE, upstreamPort, logLevel: 'warn', workDir, identity });
      }));
    }
    rows.push(await measureGateway(`Portkey ${PORTKEY_VERSION}`, () => startPortkey(root, GATEWAY_CORE, upstreamPort, workDir)));
  }

  const table = renderTable(rows, DIRECT);
  console.log(`\n${table}\n`);
  console.log(`Targets for our gateway: ≥ ${TARGETS.rpsC64.toLocaleString('en-US')} req/s at c=64; added p50 ≤ ${TARGETS.addedP50Ms} ms and p99 ≤ ${TARGETS.addedP99Ms} ms at c=1.`);

  const settings = [
    `Layout: load generator (this runner: undici c=1 loops, autocannon, undici stream pool) + fake upstream${pinnedDb > 0 ? ' + PostgreSQL' : ''} on core ${LOAD_CORE}, gateway on core ${GATEWAY_CORE}.`,
    `c=1: ${PLAN.count} requests after a warm-up of ${during(PLAN.warmup)}; streams (${STREAM_CHUNKS} chunks + usage + [DONE]): ${PLAN.streamCount} after ${during(PLAN.streamWarmup)};`,
    `c=${PLAN.connections}: ${PLAN.seconds} s after ${PLAN.warmupSeconds} s warm-up.${QUICK ? ' QUICK smoke run: not comparable.' : ''}`,
    '"added" = gateway − direct at the same percentile. CPU column: busy % of core 0 / core 1 over the measured c=64 window, and (other) CPU used by processes outside the benchmark, in % of one core.',
  ].join(' ');
  notes.push('Portkey runs `--headless`, NODE_ENV=production, with `@hono/node-server` pinned to 1.14.1 (later versions break its streaming, Portkey issue #1389); it waits 25 ms before relaying the first chunk of every stream, by design of its stream handler.');
  if (process.env.BENCH_NO_RESULTS !== '1') {
    appendResults(join(root, 'bench', 'RESULTS.md'), runInfo(root, settings), table, notes);
    console.log('bench: appended to bench/RESULTS.md');
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(`bench failed: ${err instanceof Error ? err.stack ?? err.message : String(err)}`);
    process.exit(1);
  },
);
