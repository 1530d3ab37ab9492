/**
 * The isolating runtime's cost (issue 33; docs/execution-profiles.md): gVisor's `runsc` next to
 * `runc` in one run, alternating rounds so both see the same machine. Per runtime:
 *
 * - cold and warm turns, queue → first driver event (bench/control-plane/latency.ts) with the
 *   no-op CLI agent, the host worker restarted with that runtime for `untrusted-vm-v1` work
 *   (`runc` through `AGENT_SANDBOX_BACKEND=container`);
 * - one Engine-API exec round trip (`true` as the member of a running sandbox, through
 *   `DockerSandbox.exec`, the path every agent command takes);
 * - one sandbox container create + start (`ensureSandboxContainer`, the cold turn's floor).
 *
 * Reported, never asserted: no target, the ratio is documented.
 */
import { DockerSandbox } from '../../activities/docker/docker-sandbox';
import { ensureSandboxContainer } from '../../activities/docker/sandbox-container';
import { removeSandboxContainer } from '../../activities/docker/sandbox-removal';
import { DEFAULT_RUNTIMES, type SandboxRuntimes } from '../../activities/docker/container-runtime';
import { docker, SANDBOX_IMAGE, TEST_DISK_ROOT, testLabels } from '../../test/support/docker';
import type { BenchStack } from './client';
import { measureLatency, percentile, type LatencyResult } from './latency';

export const BENCH_RUNTIMES = ['runsc', 'runc'] as const;
export type BenchRuntime = (typeof BENCH_RUNTIMES)[number];

export interface RuntimeCosts {
  runtime: BenchRuntime;
  latency: LatencyResult;
  execMs: number[];
  createStartMs: number[];
}

const RUNTIMES: Record<BenchRuntime, SandboxRuntimes> = {
  runsc: DEFAULT_RUNTIMES,
  runc: { ...DEFAULT_RUNTIMES, backend: 'container' },
};

/** Times `count` container create+start and, in the last one, `execs` round trips of `true`. */
async function measureEngine(runtime: BenchRuntime, options: { count: number; execs: number; round: number }): Promise<{ execMs: number[]; createStartMs: number[] }> {
  const createStartMs: number[] = [];
  const execMs: number[] = [];
  const spec = { name: runtime, isolating: runtime === 'runsc' };
  for (let i = 0; i < options.count; i += 1) {
    const groupId = `grp-bench-${runtime}-${options.round}-${i}-${process.pid}`;
    const started = performance.now();
    const { containerName } = await ensureSandboxContainer(docker(), {
      jobId: 'job_bench', groupId, generation: 1, attemptId: 'att_bench', hostId: 'bench', uid: 10001, image: SANDBOX_IMAGE, diskRoot: TEST_DISK_ROOT,
      runtime: spec, limits: { memoryBytes: 1024 ** 3, nanoCpus: 1e9 }, extraLabels: testLabels(),
    });
    createStartMs.push(performance.now() - started);
    if (i === options.count - 1) {
      const sandbox = new DockerSandbox(docker(), containerName, 10001);
      await sandbox.exec(['true'], { timeoutMs: 10_000, maxOutputBytes: 1024 });
      for (let n = 0; n < options.execs; n += 1) {
        const t = performance.now();
        await sandbox.exec(['true'], { timeoutMs: 10_000, maxOutputBytes: 1024 });
        execMs.push(performance.now() - t);
      }
    }
    await removeSandboxContainer(docker(), groupId, TEST_DISK_ROOT);
  }
  return { execMs, createStartMs };
}

/** `rounds` alternations of runsc and runc, each with `chats` cold + warm turn sets and the engine floors. */
export async function measureRuntimes(stack: BenchStack, options: {
  rounds: number; chats: number; followUps: number; containers: number; execs: number; progress: (line: string) => void;
}): Promise<RuntimeCosts[]> {
  const costs = new Map<BenchRuntime, RuntimeCosts>(BENCH_RUNTIMES.map((r) => [r, { runtime: r, latency: { cold: [], warm: [] }, execMs: [], createStartMs: [] }]));
  try {
    for (let round = 0; round < options.rounds; round += 1) {
      for (const runtime of BENCH_RUNTIMES) {
        await stack.stopHost();
        await stack.startHost({ runtimes: RUNTIMES[runtime] });
        const cost = costs.get(runtime)!;
        const latency = await measureLatency(stack, { chats: options.chats, followUps: options.followUps, progress: () => undefined });
        cost.latency.cold.push(...latency.cold);
        cost.latency.warm.push(...latency.warm);
        const engine = await measureEngine(runtime, { count: options.containers, execs: options.execs, round });
        cost.execMs.push(...engine.execMs);
        cost.createStartMs.push(...engine.createStartMs);
        options.progress(`runtimes: round ${round + 1}/${options.rounds} ${runtime}: warm first event p50 ${percentile(latency.warm.map((t) => t.firstDriverEventMs), 50).toFixed(0)} ms, exec p50 ${percentile(engine.execMs, 50).toFixed(0)} ms`);
      }
    }
  } finally {
    await stack.stopHost();
    await stack.startHost();
  }
  return [...costs.values()];
}

/** The printed table: p50 / p95 per runtime, and runsc ÷ runc per row. */
export function runtimeTable(costs: readonly RuntimeCosts[]): string {
  const of = (runtime: BenchRuntime) => costs.find((c) => c.runtime === runtime)!;
  const rows: Array<[string, (c: RuntimeCosts) => number[]]> = [
    ['cold turn: POST → first driver event', (c) => c.latency.cold.map((t) => t.firstDriverEventMs)],
    ['warm turn: POST → first driver event', (c) => c.latency.warm.map((t) => t.firstDriverEventMs)],
    ['warm turn: POST → turn_started', (c) => c.latency.warm.map((t) => t.startedMs)],
    ['exec round trip (`true` as the member)', (c) => c.execMs],
    ['sandbox container create + start', (c) => c.createStartMs],
  ];
  const ms = (v: number) => (Number.isFinite(v) ? v.toFixed(0) : 'n/a');
  const lines = ['| measure | n | runsc p50 | runsc p95 | runc p50 | runc p95 | runsc ÷ runc (p50) |', '|---|---|---|---|---|---|---|'];
  for (const [name, pick] of rows) {
    const a = pick(of('runsc'));
    const b = pick(of('runc'));
    const ratio = percentile(a, 50) / percentile(b, 50);
    lines.push(`| ${name} | ${a.length} / ${b.length} | ${ms(percentile(a, 50))} | ${ms(percentile(a, 95))} | ${ms(percentile(b, 50))} | ${ms(percentile(b, 95))} | ${Number.isFinite(ratio) ? `${ratio.toFixed(2)}×` : 'n/a'} |`);
  }
  return lines.join('\n');
}
