/**
 * What the gateway knows about its database: whether one is configured, whether it answered
 * at startup, and whether it answers now. Checked off the hot path (health endpoints and a
 * background retry after a failed startup), never per inference request.
 */
import { pingDb, type Db } from '../../lib/db';
import type { Logger } from '../../lib/logger';

export class DatabaseState {
  /** True while the database configured at startup has not answered yet. */
  unavailableAtStartup = false;
  private retryTimer: NodeJS.Timeout | undefined;

  constructor(readonly db: Db | null, private readonly log: Logger, private readonly retryMs = 5000) {}

  get configured(): boolean {
    return this.db !== null;
  }

  /** Pings once at startup; on failure keeps retrying in the background until it answers. */
  async startup(onConnected: () => Promise<void> = async () => {}): Promise<void> {
    if (!this.db) return;
    if (await pingDb(this.db, 3000)) {
      await onConnected();
      return;
    }
    this.unavailableAtStartup = true;
    this.log.error({ event: 'database_unavailable_at_startup' }, 'Database configured but unreachable at startup; retrying in the background');
    const retry = async (): Promise<void> => {
      if (this.db && (await pingDb(this.db, 3000))) {
        this.unavailableAtStartup = false;
        this.log.info('Database reachable again; startup completed');
        await onConnected();
        return;
      }
      this.retryTimer = setTimeout(() => void retry(), this.retryMs);
      this.retryTimer.unref();
    };
    this.retryTimer = setTimeout(() => void retry(), this.retryMs);
    this.retryTimer.unref();
  }

  /** Live check (bounded by `timeoutMs`). False when no database is configured. */
  async connected(timeoutMs = 1000): Promise<boolean> {
    return this.db ? pingDb(this.db, timeoutMs) : false;
  }

  stop(): void {
    clearTimeout(this.retryTimer);
  }
}
