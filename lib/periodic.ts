/**
 * A background task run every few seconds (cache refreshes): the first run is awaited by
 * `start()` and its failure propagates; later failures are logged and the next tick retries.
 * Ticks never overlap, and the timer does not keep the process alive.
 */
import type { Logger } from './logger';

export class Periodic {
  private timer: NodeJS.Timeout | undefined;
  private running = false;

  constructor(private readonly task: () => Promise<void>, private readonly everyMs: number, private readonly log: Logger, private readonly what: string) {}

  get started(): boolean {
    return this.timer !== undefined;
  }

  /** Runs the task once, then every `everyMs`; with `retryFirst` a failed first run is logged and retried like a later one. */
  async start(options: { retryFirst?: boolean } = {}): Promise<void> {
    if (this.timer) return;
    try {
      await this.task();
    } catch (err) {
      if (!options.retryFirst) throw err;
      this.log.warn({ err }, `${this.what} failed; retrying`);
    }
    this.timer = setInterval(() => void this.tick(), this.everyMs);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      await this.task();
    } catch (err) {
      this.log.warn({ err }, `${this.what} failed; keeping the last values and retrying`);
    } finally {
      this.running = false;
    }
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }
}
