/**
 * The host runner's preflight loop (docs/execution-profiles.md "Preflight and attestation"): runs
 * the runtime preflight at start and then every `AGENT_PREFLIGHT_SECONDS` (sooner when a sandbox
 * failed to start under a runtime), and keeps the latest result for the heartbeat to report. The
 * attestations change only through a preflight: a host whose isolating runtime disappears stops
 * attesting `untrusted-vm-v1` at the next round, and admission stops placing untrusted turns there.
 */
import type Docker from 'dockerode';
import type { Logger } from '../lib/logger';
import { runPreflight, type Preflight } from '../activities/docker/runtime-preflight';
import type { SandboxRuntimes } from '../activities/docker/container-runtime';

export interface PreflightLoopOptions {
  docker: Docker;
  image: string;
  runtimes: SandboxRuntimes;
  hostId: string;
  log: Logger;
  /** Labels on the probe containers (tests mark theirs). */
  labels?: Record<string, string>;
}

export interface PreflightLoop {
  /** Runs one preflight now (a round already running is awaited instead) and keeps its result. */
  runNow(): Promise<Preflight>;
  /** The latest result (undefined before the first round ends). */
  latest(): Preflight | undefined;
  /** Repeats every `intervalMs`. */
  start(intervalMs: number): void;
  stop(): void;
}

export function createPreflightLoop(options: PreflightLoopOptions): PreflightLoop {
  const { log } = options;
  let latest: Preflight | undefined;
  let running: Promise<Preflight> | undefined;
  let timer: NodeJS.Timeout | undefined;

  const report = (result: Preflight, previous: Preflight | undefined): void => {
    const changed = previous === undefined || previous.attestations.join(',') !== result.attestations.join(',');
    const fields = {
      event: 'agent_host_preflight', host_id: options.hostId, host_kernel: result.host_kernel, backend: result.backend,
      attestations: result.attestations, refused: result.refused,
      probes: result.probes.map((p) => ({ runtime: p.runtime, ok: p.ok, guest_kernel: p.guest_kernel, duration_ms: p.duration_ms })),
    };
    if (!changed) log.debug(fields, 'runtime preflight unchanged');
    else if (result.attestations.includes('untrusted-vm-v1')) log.info(fields, 'runtime preflight: this host takes untrusted work');
    else log.warn(fields, 'runtime preflight: this host cannot take untrusted-vm-v1 work');
  };

  const runNow = (): Promise<Preflight> => {
    running ??= runPreflight({ docker: options.docker, image: options.image, runtimes: options.runtimes, ...(options.labels ? { labels: options.labels } : {}) })
      .then((result) => {
        report(result, latest);
        latest = result;
        return result;
      })
      .finally(() => {
        running = undefined;
      });
    return running;
  };

  return {
    runNow,
    latest: () => latest,
    start(intervalMs) {
      if (timer) return;
      timer = setInterval(() => void runNow().catch((err: unknown) => log.warn({ err: (err as Error).message }, 'runtime preflight failed')), intervalMs);
      timer.unref();
    },
    stop() {
      if (timer) clearInterval(timer);
      timer = undefined;
    },
  };
}
