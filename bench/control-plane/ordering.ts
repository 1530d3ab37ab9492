/**
 * The ordering run: many chats of several turns submitted concurrently (bounded client
 * concurrency), random cancels of mostly middle turns shortly after submission, and a restart of
 * the control worker (`stopControl()` then `startControl()`) once a share of the turns is done.
 * While it runs, the number of `running` attempts is sampled from PostgreSQL (a consistent
 * snapshot per sample) to find the peak slot use. The checks themselves are in violations.ts.
 */
import { addTurn, cancelTurn, createChat, pool, sleep, type CancelAnswer, type BenchStack } from './client';
import { cpuSnapshot, cpuSpent, type CpuSeconds } from './cpu-split';
import { waitSettled } from './throughput';
import { seededRng } from '../../gateway/routing/weighted-order';

export interface OrderingOptions {
  chats: number;
  turnsPerChat: number;
  concurrency: number;
  /** Share of chats that get one cancel. */
  cancelShare: number;
  /** The control worker restarts once this share of all turns is terminal. */
  restartAtShare: number;
  /** How long the control worker stays down. */
  restartDownMs: number;
  seed: number;
  progress: (line: string) => void;
}

export interface OrderingRun {
  jobIds: string[];
  /** Turns whose cancel answered `cancelled` (they were queued): they must never start. */
  queuedCancels: Array<{ jobId: string; seq: number }>;
  cancelAnswers: Record<CancelAnswer, number>;
  restart: { atTurnsDone: number; atSecond: number; downMs: number } | undefined;
  seconds: number;
  maxSampledRunning: number;
  samples: number;
  states: Record<string, number>;
  /** CPU seconds by group over the run. */
  cpu: CpuSeconds;
  /** Client-side failures (a chat whose submission failed is left out of the run). */
  errors: string[];
}

/** Samples `count(*)` of running attempts every `everyMs` until stopped; keeps the peak. */
export function startRunningSampler(stack: BenchStack, everyMs = 100): { stop(): Promise<{ max: number; samples: number }> } {
  let stopped = false;
  let max = 0;
  let samples = 0;
  const loop = (async () => {
    while (!stopped) {
      try {
        const row = await stack.observer('agent_attempts').where({ state: 'running' }).count<{ count: string }>({ count: '*' }).first();
        max = Math.max(max, Number(row?.count ?? 0));
        samples += 1;
      } catch { /* a missed sample; the next one follows */ }
      await sleep(everyMs);
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      return { max, samples };
    },
  };
}

async function terminalCount(stack: BenchStack, jobIds: readonly string[]): Promise<number> {
  if (jobIds.length === 0) return 0;
  const row = await stack.observer('agent_turns').whereIn('job_id', jobIds).whereIn('state', ['completed', 'failed', 'cancelled']).count<{ count: string }>({ count: '*' }).first();
  return Number(row?.count ?? 0);
}

export async function runOrdering(stack: BenchStack, options: OrderingOptions): Promise<OrderingRun> {
  const random = seededRng(options.seed);
  const total = options.chats * options.turnsPerChat;
  const jobIds: string[] = [];
  const queuedCancels: OrderingRun['queuedCancels'] = [];
  const cancelAnswers: Record<CancelAnswer, number> = { cancelled: 0, running: 0, conflict: 0 };
  const cancels: Array<Promise<void>> = [];
  const sampler = startRunningSampler(stack);
  const cpuBefore = cpuSnapshot(stack.t.name);
  const started = performance.now();
  let restart: OrderingRun['restart'];

  // Restarts the control worker once enough turns are terminal (while submission may still run).
  let settled = false;
  const errors: string[] = [];
  let submittedChats = 0;
  const restarter = (async () => {
    while (!restart && !settled) {
      const done = await terminalCount(stack, jobIds).catch(() => 0);
      if (done >= total * options.restartAtShare) {
        const atSecond = (performance.now() - started) / 1000;
        options.progress(`ordering: ${done}/${total} turns terminal — stopping the control worker`);
        await stack.stopControl();
        await sleep(options.restartDownMs);
        await stack.startControl();
        restart = { atTurnsDone: done, atSecond, downMs: options.restartDownMs };
        options.progress('ordering: control worker started again');
      }
      await sleep(200);
    }
  })().catch((err: unknown) => {
    errors.push(`control worker restart: ${(err as Error).message}`);
  });

  const plan = Array.from({ length: options.chats }, (_, i) => ({
    index: i,
    cancelSeq: random() < options.cancelShare ? pickCancelSeq(random, options.turnsPerChat) : undefined,
    cancelDelayMs: Math.floor(random() * 1500),
  }));
  await pool(plan, options.concurrency, async (chat) => {
    let jobId: string;
    try {
      jobId = (await createChat(stack, { prompt: `ordering chat ${chat.index} turn 1` })).jobId;
      jobIds.push(jobId);
      for (let seq = 2; seq <= options.turnsPerChat; seq += 1) await addTurn(stack, jobId, `ordering chat ${chat.index} turn ${seq}`);
    } catch (err) {
      errors.push(`chat ${chat.index}: ${(err as Error).message}`);
      return;
    }
    if (chat.cancelSeq !== undefined) {
      const seq = chat.cancelSeq;
      cancels.push(sleep(chat.cancelDelayMs).then(async () => {
        const answer = await cancelTurn(stack, jobId, seq);
        cancelAnswers[answer] += 1;
        if (answer === 'cancelled') queuedCancels.push({ jobId, seq });
      }).catch((err: unknown) => {
        errors.push(`cancel ${jobId}/${seq}: ${(err as Error).message}`);
      }));
    }
    submittedChats += 1;
    if (submittedChats % 50 === 0) options.progress(`ordering: ${submittedChats}/${options.chats} chats submitted`);
  });
  await Promise.all(cancels);
  // Generous: on a loaded 2-core machine 1,000 turns take about 10 minutes; a turn still open at the end is reported.
  const states = await waitSettled(stack, jobIds, { timeoutMs: 1_500_000, progress: options.progress, label: 'ordering' });
  const seconds = (performance.now() - started) / 1000;
  const cpu = cpuSpent(cpuBefore, cpuSnapshot(stack.t.name));
  settled = true;
  await restarter;
  const { max, samples } = await sampler.stop();
  return { jobIds, queuedCancels, cancelAnswers, restart, seconds, maxSampledRunning: max, samples, states, cpu, errors };
}

/** Mostly a middle turn (2 … n−1), sometimes the last. */
function pickCancelSeq(random: () => number, turns: number): number {
  if (random() < 0.15) return turns;
  return 2 + Math.floor(random() * (turns - 2));
}
