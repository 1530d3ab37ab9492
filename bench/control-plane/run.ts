/**
 * `npm run bench:control-plane`: the agent control plane under load, over the real stack of the
 * integration tests (test/support/agent-stack.ts: PostgreSQL, Temporal dev server, Docker, API,
 * control worker, host runner, gateway with a fake upstream), in this one process. Prints
 * (does not assert) and appends a section to bench/RESULTS.md:
 *
 * 1. queue → first event latency p50/p95, cold (first turn of a new chat: container created) and
 *    warm (follow-up turn), to `turn_started` and to the first driver event on the SSE stream;
 * 2. turns per second with a no-op CLI agent over warm chats;
 * 3. an ordering run (many chats × turns, random cancels, a control worker restart) checked
 *    against PostgreSQL for ordering and safety violations (target 0);
 * 0. first, warm turns by driver: built-in next to the native Codex CLI and Claude Code
 *    (bench/control-plane/drivers.ts), and the runtimes: cold and warm turns, exec round trip and
 *    container create+start under gVisor's runsc next to runc, alternating rounds
 *    (bench/control-plane/runtimes.ts).
 *
 * Sizes can be lowered for a trial with CP_* variables (see `config`); CP_NO_RESULTS=1 skips
 * RESULTS.md; CP_ONLY_DRIVERS=1 / CP_ONLY_RUNTIMES=1 run and print only that phase.
 */
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { createDb } from '../../lib/db';
import { startAgentStack } from '../../test/support/agent-stack';
import { teardownTemporal } from '../../test/support/temporal';
import { runInfo } from '../gateway/report';
import { NOOP_CLI_COMMAND, type BenchStack } from './client';
import { measureDriverTurns } from './drivers';
import { measureLatency } from './latency';
import { runOrdering } from './ordering';
import { appendResults, driverTable, orderingNotes, renderTables } from './report';
import { measureThroughput } from './throughput';
import { measureRuntimes, runtimeTable } from './runtimes';
import { checkViolations, peakOverlappingAttempts } from './violations';

const num = (name: string, fallback: number): number => {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number`);
  return value;
};

const config = {
  slots: num('CP_SLOTS', 16),
  latencyChats: num('CP_LATENCY_CHATS', 20),
  warmFollowUps: num('CP_WARM_FOLLOW_UPS', 2),
  driverTurns: num('CP_DRIVER_TURNS', 5),
  throughputChats: num('CP_THROUGHPUT_CHATS', 40),
  throughputTurnsPerChat: num('CP_THROUGHPUT_TURNS', 5),
  orderingChats: num('CP_ORDERING_CHATS', 200),
  orderingTurnsPerChat: num('CP_ORDERING_TURNS', 5),
  clientConcurrency: num('CP_CLIENT_CONCURRENCY', 16),
  runtimeRounds: num('CP_RUNTIME_ROUNDS', 3),
  runtimeChats: num('CP_RUNTIME_CHATS', 4),
  runtimeContainers: num('CP_RUNTIME_CONTAINERS', 3),
  runtimeExecs: num('CP_RUNTIME_EXECS', 30),
  seed: num('CP_SEED', 20261121),
};

/**
 * The stack's test settings (5 s turn heartbeat timeout, grant renewal every 2 s) are for fast
 * failure tests; the bench runs the production defaults, so a loaded machine does not turn slow
 * heartbeats into lost turns, and grant renewals cost what they cost in production.
 */
const STACK_ENV = { AGENT_CLI_COMMAND: NOOP_CLI_COMMAND, AGENT_TURN_HEARTBEAT_TIMEOUT_SECONDS: '30', AGENT_GRANT_RENEW_SECONDS: '60' };

const started = Date.now();
const progress = (line: string): void => {
  console.log(`[${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s] ${line}`);
};

/** Prints a one-phase table and (unless CP_NO_RESULTS=1) appends it to RESULTS.md as its own dated section. */
function reportPhase(title: string, about: string, table: string): void {
  console.log(`\n${table}\n`);
  if (process.env.CP_NO_RESULTS === '1') return;
  const info = runInfo(join(__dirname, '../..'), '');
  appendFileSync(join(__dirname, '../../bench/RESULTS.md'), [
    '', `## ${info.date.toISOString().slice(0, 16).replace('T', ' ')} UTC — ${title}`, '',
    `- Machine: nproc ${info.nproc}, CPU ${info.cpu}; Node ${info.node}; commit ${info.commit}`, `- ${about}`, '', table, '',
  ].join('\n'));
  progress('appended a section to bench/RESULTS.md');
}

/** Only the runtimes phase, with its own section in RESULTS.md. */
async function benchRuntimes(stack: BenchStack): Promise<void> {
  const costs = await measureRuntimes(stack, {
    rounds: config.runtimeRounds, chats: config.runtimeChats, followUps: config.warmFollowUps, containers: config.runtimeContainers, execs: config.runtimeExecs, progress,
  });
  reportPhase('runsc next to runc (`CP_ONLY_RUNTIMES=1 npm run bench:control-plane`)',
    `${config.runtimeRounds} rounds alternating runsc and runc; per round and runtime: the host worker restarted with that runtime, ${config.runtimeChats} new chats one at a time (cold turn 1, ${config.warmFollowUps} warm follow-ups; no-op CLI agent, first driver event on the SSE stream), ${config.runtimeContainers} sandbox containers created and started, ${config.runtimeExecs} exec round trips of \`true\` as the member. No target: the ratio is documented (docs/execution-profiles.md).`,
    runtimeTable(costs));
}

async function bench(stack: BenchStack): Promise<void> {
  progress(`stack up: host ${stack.hostId}, ${config.slots} slots, CLI driver = no-op agent`);
  if (process.env.CP_ONLY_RUNTIMES === '1') {
    await benchRuntimes(stack);
    return;
  }
  const drivers = await measureDriverTurns(stack, { turns: config.driverTurns, progress });
  if (process.env.CP_ONLY_DRIVERS === '1') {
    reportPhase('warm turns by driver (`CP_ONLY_DRIVERS=1 npm run bench:control-plane`)',
      'Stack: test/support/agent-stack.ts in one process; one chat per driver, its first turn left out, then each follow-up turn posted after the previous one ended; the fake upstream answers every model call with one short text.',
      driverTable(drivers));
    return;
  }
  const runtimes = runtimeTable(await measureRuntimes(stack, {
    rounds: config.runtimeRounds, chats: config.runtimeChats, followUps: config.warmFollowUps, containers: config.runtimeContainers, execs: config.runtimeExecs, progress,
  }));
  console.log(`\n${runtimes}\n`);
  const latency = await measureLatency(stack, { chats: config.latencyChats, followUps: config.warmFollowUps, progress });
  const throughput = await measureThroughput(stack, {
    chats: config.throughputChats, turnsPerChat: config.throughputTurnsPerChat, concurrency: config.clientConcurrency, progress,
  });
  progress(`throughput: ${throughput.turns} turns in ${throughput.seconds.toFixed(1)} s = ${throughput.turnsPerSecond.toFixed(2)} turns/s`);
  const ordering = await runOrdering(stack, {
    chats: config.orderingChats, turnsPerChat: config.orderingTurnsPerChat, concurrency: config.clientConcurrency,
    cancelShare: 0.3, restartAtShare: 0.4, restartDownMs: 3000, seed: config.seed, progress,
  });
  progress(`ordering: settled after ${ordering.seconds.toFixed(1)} s; checking PostgreSQL`);
  const violations = await checkViolations({
    db: stack.observer, jobIds: ordering.jobIds, queuedCancels: ordering.queuedCancels, maxSampledRunning: ordering.maxSampledRunning, slots: config.slots,
  });
  const results = {
    slots: config.slots, latency, throughput, ordering, violations, drivers,
    orderingTurns: Number((await stack.observer('agent_turns').whereIn('job_id', ordering.jobIds).count<{ count: string }>({ count: '*' }).first())?.count ?? 0),
    peakFromTimestamps: await peakOverlappingAttempts(stack.observer, ordering.jobIds),
  };
  console.log(`\n${renderTables(results)}\n`);
  for (const note of orderingNotes(results)) console.log(`- ${note}`);
  if (process.env.CP_NO_RESULTS === '1') return;
  const root = join(__dirname, '../..');
  const info = runInfo(root, `Stack: one process (test/support/agent-stack.ts) — API, control worker, host runner (${config.slots} slots, Docker \`agent-sandbox:base\`), gateway + fake upstream; PostgreSQL and a Temporal dev server (started by the bench) on the same machine, shared with other sessions' work.`);
  appendResults(join(root, 'bench/RESULTS.md'), info, results, [
    'Database pool: the stack\'s API, workers and gateway share one pool of 30 connections here (production: three processes × 10); the bench polls through its own pool of 2.',
    `Settings: production defaults AGENT_TURN_HEARTBEAT_TIMEOUT_SECONDS=30, AGENT_GRANT_RENEW_SECONDS=60 (the test stack's 5 s / 2 s are overridden).`,
    `Agent: CLI driver with AGENT_CLI_COMMAND = \`${NOOP_CLI_COMMAND}\` (no-op: one \`result\` line; latency chats set BENCH_TALK=1 so it first prints one \`assistant\` line = the first driver event). Client concurrency ${config.clientConcurrency} requests.`,
    `Latency: ${config.latencyChats} new chats one at a time (cold: turn 1), each with ${config.warmFollowUps} follow-up turns (warm), each turn posted after the previous one ended; measured from the POST's response to the frame's arrival on \`GET /v1/agent/jobs/:id/events\` (opened after the POST, resuming with Last-Event-ID).`,
    `Throughput: ${config.throughputChats} chats warmed first (turn 1 not counted), then ${config.throughputChats * config.throughputTurnsPerChat} turns posted at once; time from the first POST to the last turn's end.`,
    'CPU per turn (from /proc over each run): machine busy time, then this one Node process (API, control worker, host runner, gateway, bench client), the Temporal dev server, the PostgreSQL backends of the bench database, the Docker daemons (dockerd, containerd, shims; shared with other sessions); other = the rest of the busy time (other sessions, short-lived processes such as runc and the agent inside containers). Ordering-run figures are per posted turn (cancelled ones included).',
    `Ordering run: ${config.orderingChats} chats × ${config.orderingTurnsPerChat} turns posted concurrently; 30 % of chats cancel one turn (mostly a middle one) 0–1.5 s after their last POST; the control worker is stopped for 3 s once 40 % of turns are terminal. Seed ${config.seed}.`,
  ]);
  appendFileSync(join(root, 'bench/RESULTS.md'), `\nRuntimes (${config.runtimeRounds} rounds alternating runsc and runc, ${config.runtimeChats} chats each; bench/control-plane/runtimes.ts):\n\n${runtimes}\n`);
  progress('appended a section to bench/RESULTS.md');
}

async function main(): Promise<void> {
  progress('starting the stack (fresh database, Temporal dev server, API, workers)');
  // One pool for API, workers and gateway here; in production they are three processes with 10 each.
  // supports_tools and parallel_tool_calls: Codex sends them (the drivers phase).
  const stack = await startAgentStack({ slots: config.slots, env: STACK_ENV, poolMax: 30, modelFields: 'supports_tools: true, supported_params: [temperature, max_tokens, parallel_tool_calls]' });
  const observer = createDb({ url: stack.t.url, poolMax: 2, applicationName: 'bench-observer' });
  try {
    await bench(Object.assign(stack, { observer }));
  } finally {
    progress('cleaning up (workers, containers, database)');
    await observer.destroy();
    await stack.close();
    await teardownTemporal();
  }
  progress('done');
}

// A stray rejection must not end the run before the stack is cleaned up: log it and go on.
process.on('unhandledRejection', (err) => console.error('unhandled rejection:', err));

main().then(() => process.exit(0), (err: unknown) => {
  console.error(err);
  process.exit(1);
});
