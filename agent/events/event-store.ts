/**
 * The agent event log in PostgreSQL (`agent_events`; docs/agent-events.md). Writers append under a
 * per-job transaction-scoped advisory lock, so for one job ids become visible strictly in id order:
 * a reader that has seen id N never later finds a new event of that job with a smaller id, and
 * paging with `event_id > last_seen` misses nothing. Every committed append notifies
 * `agent_events` with the job id (see event-notifier.ts). Repeated writes of one dedupe key are
 * no-ops, which makes retried host batches and re-run activities idempotent.
 */
import type { Knex } from 'knex';
import type { Db } from '../../lib/db';
import type { AgentEventType } from './event-types';

/** The notification channel; its payload is the job id. */
export const EVENTS_CHANNEL = 'agent_events';

/** First key of the two-key advisory lock namespace used for per-job event appends. */
const APPEND_LOCK_CLASS = 727_100;

export interface NewEvent {
  /** The turn's `seq` within its chat. */
  turnSeq: number;
  /** The attempt that produced the event, or null for control-plane events (`turn_*`). */
  attemptId: string | null;
  /** Order within the attempt (or within the turn for control-plane events). */
  seq: number;
  eventType: AgentEventType;
  payload: Record<string, unknown>;
  isError?: boolean;
  /** Defaults to {@link defaultDedupeKey}. */
  dedupeKey?: string;
}

/** An event as clients see it. `event_id` is a decimal string: bigserial ids may pass 2^53. */
export interface StoredEvent {
  event_id: string;
  turn_seq: number;
  attempt_id: string | null;
  seq: number;
  event_type: AgentEventType;
  payload: Record<string, unknown>;
  is_error: boolean;
  /** ISO 8601 (UTC). */
  created_at: string;
}

/** A row as selected (`EVENT_COLUMNS`): the client shape with the database's time type. */
type EventRow = Omit<StoredEvent, 'created_at'> & { created_at: Date };

const EVENT_COLUMNS = ['event_id', 'turn_seq', 'attempt_id', 'seq', 'event_type', 'payload', 'is_error', 'created_at'];

/**
 * The dedupe key of an event without an explicit one. An attempt's events are identified by
 * attempt and seq (`attempt:<attemptId>:<seq>`; attempt ids are globally unique), so a host
 * resending a batch writes nothing twice. Control-plane events are identified by job, turn, type
 * and seq (`job:<jobId>:turn:<turnSeq>:<eventType>:<seq>`).
 */
export function defaultDedupeKey(jobId: string, event: Pick<NewEvent, 'attemptId' | 'turnSeq' | 'seq' | 'eventType'>): string {
  return event.attemptId !== null
    ? `attempt:${event.attemptId}:${event.seq}`
    : `job:${jobId}:turn:${event.turnSeq}:${event.eventType}:${event.seq}`;
}

function toStored(row: EventRow): StoredEvent {
  return {
    event_id: String(row.event_id),
    turn_seq: row.turn_seq,
    attempt_id: row.attempt_id,
    seq: row.seq,
    event_type: row.event_type,
    payload: row.payload,
    is_error: row.is_error,
    created_at: row.created_at.toISOString(),
  };
}

function isTransaction(db: Db | Knex.Transaction): db is Knex.Transaction {
  return (db as Knex.Transaction).isTransaction === true;
}

async function appendInTransaction(trx: Knex.Transaction, jobId: string, events: NewEvent[]): Promise<StoredEvent[]> {
  await trx.raw('select pg_advisory_xact_lock(?, hashtext(?))', [APPEND_LOCK_CLASS, jobId]);
  const rows = events.map((e) => ({
    job_id: jobId,
    turn_seq: e.turnSeq,
    attempt_id: e.attemptId,
    seq: e.seq,
    event_type: e.eventType,
    payload: JSON.stringify(e.payload),
    is_error: e.isError ?? false,
    dedupe_key: e.dedupeKey ?? defaultDedupeKey(jobId, e),
  }));
  const inserted = await trx('agent_events')
    .insert(rows)
    .onConflict('dedupe_key')
    .ignore()
    .returning<EventRow[]>(EVENT_COLUMNS);
  if (inserted.length > 0) await trx.raw('select pg_notify(?, ?)', [EVENTS_CHANNEL, jobId]);
  return inserted.map(toStored).sort((a, b) => compareIds(a.event_id, b.event_id));
}

/**
 * Appends events of one job, in the given order, and returns those actually stored (a repeated
 * dedupe key returns nothing for it). Given a transaction, the events commit (and notify) with
 * it and the job's append lock is held until then; keep such transactions short.
 */
export async function appendEvents(db: Db | Knex.Transaction, jobId: string, events: NewEvent[]): Promise<StoredEvent[]> {
  if (events.length === 0) return [];
  if (isTransaction(db)) return appendInTransaction(db, jobId, events);
  return db.transaction((trx) => appendInTransaction(trx, jobId, events));
}

/** Orders decimal id strings numerically without converting them to numbers. */
export function compareIds(a: string, b: string): number {
  return a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
}

/** A cursor value (`Last-Event-ID`, `?after=`, `cursor`) as a canonical decimal id, or undefined when malformed. */
export function parseEventId(value: bigint | number | string): string | undefined {
  const text = typeof value === 'string' ? value.trim() : String(value);
  if (!/^\d{1,19}$/.test(text)) return undefined;
  const id = BigInt(text);
  return id <= 9_223_372_036_854_775_807n ? id.toString() : undefined;
}

/** Events of a job with `event_id > afterEventId`, in id order, at most `limit` of them. */
export async function listEvents(db: Db | Knex.Transaction, jobId: string, afterEventId: bigint | number | string, limit: number): Promise<StoredEvent[]> {
  const after = parseEventId(afterEventId);
  if (after === undefined) throw new RangeError(`invalid event id: ${String(afterEventId)}`);
  const rows = await db('agent_events')
    .where('job_id', jobId)
    .where('event_id', '>', after)
    .orderBy('event_id', 'asc')
    .limit(limit)
    .select<EventRow[]>(EVENT_COLUMNS);
  return rows.map(toStored);
}
