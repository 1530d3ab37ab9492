/**
 * Turns per second with the no-op CLI agent, so a turn costs only the control plane (admission,
 * grant, sandbox check, host activity, events, finish) and a `docker exec`. The chats are warmed
 * first (their first turn creates the container and is not counted); then every chat gets
 * `turnsPerChat` more turns at once and the clock runs from the first POST to the last turn's end.
 */
import { addTurn, createChat, pool, sleep, type BenchStack } from './client';
import { cpuSnapshot, cpuSpent, type CpuSeconds } from './cpu-split';
import { percentile } from './latency';

export interface ThroughputResult {
  chats: number;
  turns: number;
  seconds: number;
  turnsPerSecond: number;
  /** Turn states of the measured turns. */
  states: Record<string, number>;
  /** Medians from PostgreSQL over the measured turns: created → started (waiting) and started → finished (running), ms. */
  medianWaitMs: number;
  medianRunMs: number;
  /** CPU seconds by group over the measured window. */
  cpu: CpuSeconds;
}

const TERMINAL = ['completed', 'failed', 'cancelled'];

/** Resolves once no turn of `jobIds` is queued or running; returns the turn state counts. */
export async function waitSettled(stack: BenchStack, jobIds: readonly string[], options: { timeoutMs: number; progress?: (line: string) => void; label: string }): Promise<Record<string, number>> {
  const deadline = Date.now() + options.timeoutMs;
  let lastReport = Date.now();
  for (;;) {
    const rows = await stack.observer('agent_turns').whereIn('job_id', jobIds).select('state').count<Array<{ state: string; count: string }>>({ count: '*' }).groupBy('state');
    const states = Object.fromEntries(rows.map((r) => [r.state, Number(r.count)]));
    const active = (states.queued ?? 0) + (states.running ?? 0);
    if (active === 0 || Date.now() > deadline) return states;
    if (options.progress && Date.now() - lastReport >= 10_000) {
      lastReport = Date.now();
      const done = TERMINAL.reduce((n, s) => n + (states[s] ?? 0), 0);
      options.progress(`${options.label}: ${done} turns finished, ${states.running ?? 0} running, ${states.queued ?? 0} queued`);
    }
    await sleep(100);
  }
}

export async function measureThroughput(stack: BenchStack, options: { chats: number; turnsPerChat: number; concurrency: number; progress: (line: string) => void }): Promise<ThroughputResult> {
  const jobIds: string[] = [];
  await pool(Array.from({ length: options.chats }, (_, i) => i), options.concurrency, async (i) => {
    jobIds.push((await createChat(stack, { prompt: `throughput chat ${i}` })).jobId);
  });
  await waitSettled(stack, jobIds, { timeoutMs: 300_000, progress: options.progress, label: 'throughput warm-up' });
  options.progress(`throughput: ${jobIds.length} chats warm (containers running); submitting ${options.chats * options.turnsPerChat} turns`);

  const cpuBefore = cpuSnapshot(stack.t.name);
  const started = performance.now();
  const work = jobIds.flatMap((jobId) => Array.from({ length: options.turnsPerChat }, () => jobId));
  // Round-robin over chats so each chat's turns are spread over the submission window.
  const order = work.map((_, i) => work[(i % options.chats) * options.turnsPerChat + Math.floor(i / options.chats)]!);
  await pool(order, options.concurrency, async (jobId, i) => {
    await addTurn(stack, jobId, `throughput turn ${i}`);
  });
  await waitSettled(stack, jobIds, { timeoutMs: 300_000, progress: options.progress, label: 'throughput' });
  const seconds = (performance.now() - started) / 1000;
  const cpu = cpuSpent(cpuBefore, cpuSnapshot(stack.t.name));
  const rows = await stack.observer('agent_turns').whereIn('job_id', jobIds).where('seq', '>', 1)
    .select('state').count<Array<{ state: string; count: string }>>({ count: '*' }).groupBy('state');
  const timings = await stack.observer('agent_turns').whereIn('job_id', jobIds).where('seq', '>', 1).whereNotNull('started_at').whereNotNull('finished_at')
    .select<Array<{ created_at: Date; started_at: Date; finished_at: Date }>>('created_at', 'started_at', 'finished_at');
  const turns = options.chats * options.turnsPerChat;
  return {
    chats: options.chats, turns, seconds, turnsPerSecond: turns / seconds, states: Object.fromEntries(rows.map((r) => [r.state, Number(r.count)])),
    medianWaitMs: percentile(timings.map((t) => t.started_at.getTime() - t.created_at.getTime()), 50),
    medianRunMs: percentile(timings.map((t) => t.finished_at.getTime() - t.started_at.getTime()), 50),
    cpu,
  };
}
