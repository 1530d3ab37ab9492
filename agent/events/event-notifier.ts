/**
 * Wakes readers of a job's event log when new events may be there. One dedicated PostgreSQL
 * connection per API process LISTENs on `agent_events` (payload: the job id) and fans out to the
 * subscribers of that job. A wake carries no data: the reader re-reads after its last seen id, so
 * a lost, duplicated or spurious wake never loses or repeats an event. While the connection is
 * down every subscriber is woken by polling (every `pollIntervalMs`, ≤ 1 s) and it reconnects with
 * backoff; on reconnect everyone is woken once, covering notifications missed in between.
 */
import pg from 'pg';
import type { Db } from '../../lib/db';
import type { Logger } from '../../lib/logger';
import { EVENTS_CHANNEL } from './event-store';

export interface EventNotifier {
  /** Calls `onWake` whenever events of `jobId` may have been appended; returns the unsubscribe function. */
  subscribe(jobId: string, onWake: () => void): () => void;
  /** Live subscriptions (of one job, or of all jobs). */
  subscriberCount(jobId?: string): number;
  /** Whether the LISTEN connection is up. */
  readonly listening: boolean;
  /** Drops every subscription and closes the connection; no reconnect afterwards. */
  close(): Promise<void>;
}

export interface EventNotifierOptions {
  /** Connection settings of the dedicated LISTEN connection (e.g. `db.client.connectionSettings`). */
  connection: pg.ClientConfig;
  log: Logger;
  /** Wake interval for every subscriber while not listening. Default 1000 ms. */
  pollIntervalMs?: number;
  /** First reconnect delay, doubled per failure up to `maxBackoffMs`. Defaults 250 ms and 10 s. */
  minBackoffMs?: number;
  maxBackoffMs?: number;
}

class PgEventNotifier implements EventNotifier {
  private readonly subscribers = new Map<string, Set<() => void>>();
  /** Connections already given up (a failing client may report both `error` and `end`). */
  private readonly retired = new WeakSet<pg.Client>();
  private client: pg.Client | undefined;
  private connecting = false;
  private closed = false;
  private backoffMs: number;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private pollTimer: NodeJS.Timeout | undefined;
  listening = false;

  constructor(private readonly options: EventNotifierOptions) {
    this.backoffMs = options.minBackoffMs ?? 250;
  }

  subscribe(jobId: string, onWake: () => void): () => void {
    if (this.closed) throw new Error('event notifier is closed');
    let set = this.subscribers.get(jobId);
    if (!set) this.subscribers.set(jobId, (set = new Set()));
    // A wrapper per subscription, so the same callback may subscribe twice.
    const entry = () => onWake();
    set.add(entry);
    this.ensureConnection();
    this.updatePolling();
    return () => {
      const current = this.subscribers.get(jobId);
      if (!current?.delete(entry)) return;
      if (current.size === 0) this.subscribers.delete(jobId);
      this.updatePolling();
    };
  }

  subscriberCount(jobId?: string): number {
    if (jobId !== undefined) return this.subscribers.get(jobId)?.size ?? 0;
    let count = 0;
    for (const set of this.subscribers.values()) count += set.size;
    return count;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.subscribers.clear();
    clearTimeout(this.reconnectTimer);
    clearInterval(this.pollTimer);
    this.pollTimer = undefined;
    const client = this.client;
    this.client = undefined;
    this.listening = false;
    if (client) {
      this.retired.add(client);
      await client.end().catch(() => undefined);
    }
  }

  private wake(jobId: string): void {
    for (const onWake of [...(this.subscribers.get(jobId) ?? [])]) onWake();
  }

  private wakeAll(): void {
    for (const jobId of [...this.subscribers.keys()]) this.wake(jobId);
  }

  /** Polls while someone waits and the connection is down. */
  private updatePolling(): void {
    const needed = !this.closed && !this.listening && this.subscribers.size > 0;
    if (needed && !this.pollTimer) {
      this.pollTimer = setInterval(() => this.wakeAll(), this.options.pollIntervalMs ?? 1000);
      this.pollTimer.unref();
    } else if (!needed && this.pollTimer) {
      clearInterval(this.pollTimer);
      this.pollTimer = undefined;
    }
  }

  private ensureConnection(): void {
    if (this.closed || this.client || this.connecting || this.reconnectTimer) return;
    this.connecting = true;
    void this.connect().finally(() => {
      this.connecting = false;
    });
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({ ...this.options.connection, application_name: 'agent-event-notifier' });
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client, undefined));
    client.on('notification', (msg) => {
      if (msg.channel === EVENTS_CHANNEL && msg.payload) this.wake(msg.payload);
    });
    try {
      await client.connect();
      await client.query(`listen ${EVENTS_CHANNEL}`);
    } catch (err) {
      this.lost(client, err);
      return;
    }
    if (this.closed) {
      this.retired.add(client);
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    this.listening = true;
    this.backoffMs = this.options.minBackoffMs ?? 250;
    this.updatePolling();
    this.wakeAll();
  }

  /** The connection failed or ended: poll meanwhile and reconnect after a backoff. */
  private lost(client: pg.Client, err: unknown): void {
    if (this.retired.has(client)) return;
    this.retired.add(client);
    const wasListening = this.listening;
    this.client = undefined;
    this.listening = false;
    client.removeAllListeners('notification');
    client.on('error', () => undefined);
    void client.end().catch(() => undefined);
    if (this.closed) return;
    if (wasListening || err) {
      this.options.log.warn({ err: err instanceof Error ? err.message : undefined, retry_ms: this.backoffMs }, 'agent event LISTEN connection lost; polling until it is back');
    }
    this.updatePolling();
    if (this.reconnectTimer) return;
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      this.ensureConnection();
    }, this.backoffMs);
    this.reconnectTimer.unref();
    this.backoffMs = Math.min(this.backoffMs * 2, this.options.maxBackoffMs ?? 10_000);
  }
}

/** The connection settings of a knex pool, for a notifier beside it on the same database. */
export function connectionSettingsOf(db: Db): pg.ClientConfig {
  const client = db.client as { connectionSettings?: pg.ClientConfig }; // knex types its client as any
  return { ...client.connectionSettings };
}

/** A notifier with its own LISTEN connection, opened on the first subscription. */
export function createEventNotifier(options: EventNotifierOptions): EventNotifier {
  return new PgEventNotifier(options);
}
