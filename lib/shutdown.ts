/**
 * Graceful shutdown: on SIGTERM/SIGINT run the registered steps in order (drain HTTP, stop
 * workers, close pools), each bounded by the grace period, then exit.
 *
 * The same signal again while draining exits at once (an impatient second Ctrl-C, a supervisor
 * insisting). The *other* signal during the drain is ignored: Ctrl-C under `npm start` reaches
 * every process of the terminal's process group as SIGINT, and the starter also sends its
 * children SIGTERM (it cannot know whether they got the SIGINT), so one Ctrl-C means
 * SIGINT + SIGTERM to each child; that pair is one request to stop, drained once
 * (docs/dev-stack.md "`npm start`").
 */
import type { Logger } from './logger';

export interface ShutdownStep {
  name: string;
  run: () => Promise<void>;
}

export interface Shutdown {
  /** Adds a step; steps run in the order added. */
  add(step: ShutdownStep): void;
  /** Runs every step once (also what the signal handlers call). */
  run(reason: string): Promise<void>;
}

/** Creates the process's shutdown sequence and, unless `signals: false`, installs signal handlers. */
export function createShutdown(options: { log: Logger; graceMs: number; signals?: boolean; exit?: (code: number) => void }): Shutdown {
  const steps: ShutdownStep[] = [];
  let running: Promise<void> | undefined;
  const exit = options.exit ?? ((code: number) => process.exit(code));

  const run = (reason: string): Promise<void> => {
    running ??= (async () => {
      options.log.info({ reason }, 'shutting down');
      for (const step of steps) {
        const started = Date.now();
        try {
          await withTimeout(step.run(), options.graceMs, step.name);
          options.log.info({ step: step.name, ms: Date.now() - started }, 'shutdown step done');
        } catch (err) {
          options.log.error({ err, step: step.name }, 'shutdown step failed');
        }
      }
    })();
    return running;
  };

  if (options.signals !== false) {
    let first: NodeJS.Signals | undefined;
    for (const signal of ['SIGTERM', 'SIGINT'] as const) {
      process.on(signal, () => {
        if (first === signal) {
          options.log.warn({ signal }, 'second signal: exiting now');
          exit(1);
          return;
        }
        if (first) {
          options.log.debug({ signal, first }, 'already shutting down: the other stop signal is part of the same request');
          return;
        }
        first = signal;
        void run(signal).then(() => exit(0));
      });
    }
  }
  return { add: (step) => steps.push(step), run };
}

async function withTimeout(promise: Promise<void>, ms: number, name: string): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${name} did not finish within ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
