/**
 * One event's stored payload for an operator (docs/agent-admin.md "Event content").
 * The read is audited before anything is returned: {@link readEventContent} writes the
 * `agent.run.event_content.read` row through `auditBeforeDisclose`, so a failed write answers
 * 503 and the payload never leaves this module. A refused read (unknown job, event of another
 * job) discloses nothing and writes no row.
 *
 * The payload is capped at {@link EVENT_CONTENT_CAP_BYTES} of its JSON text, measured exactly as
 * host ingest measures it (`Buffer.byteLength(JSON.stringify(payload))`, UTF-8): a payload that
 * fits is returned as its value; a longer one as a string, the leading bytes of that text cut at a
 * UTF-8 character boundary, with `truncated: true`.
 */
import type { Db } from '../../lib/db';
import { AppError } from '../../lib/errors';
import { auditBeforeDisclose, type AuditBy } from '../audit/audit-log';
import { JOB_ID } from '../jobs/job-store';
import { parseEventId } from './event-store';

/** Bytes of the payload's JSON text (UTF-8) returned at most: 256 KiB. */
export const EVENT_CONTENT_CAP_BYTES = 256 * 1024;

/** The payload as returned: the value when it fits, else the cut JSON text. */
export interface CappedPayload {
  payload: Record<string, unknown> | string;
  /** True when `payload` is the cut text of a payload over the cap. */
  truncated: boolean;
  /** Bytes of the whole payload's JSON text (UTF-8), whether cut or not. */
  payload_bytes: number;
}

/** What the route answers: the event's envelope, its owner's job id and the capped payload. */
export interface EventContent extends CappedPayload {
  job_id: string;
  event_id: string;
  turn_seq: number;
  attempt_id: string | null;
  seq: number;
  event_type: string;
  is_error: boolean;
  /** ISO 8601 (UTC). */
  created_at: string;
}

/**
 * The longest prefix of `text` whose UTF-8 encoding is at most `maxBytes`, never splitting a
 * character: when the byte at the cut is a continuation byte, the cut moves back to the start of
 * that character. (A UTF-16 surrogate pair is one 4-byte UTF-8 character, so it is kept or dropped whole.)
 */
export function cutUtf8(text: string, maxBytes: number): string {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= maxBytes) return text;
  let end = maxBytes;
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end -= 1;
  return bytes.subarray(0, end).toString('utf8');
}

/** `payload` within `capBytes` of JSON text: the value when it fits, else its cut text. */
export function capPayload(payload: Record<string, unknown>, capBytes = EVENT_CONTENT_CAP_BYTES): CappedPayload {
  const text = JSON.stringify(payload);
  const size = Buffer.byteLength(text, 'utf8');
  if (size <= capBytes) return { payload, truncated: false, payload_bytes: size };
  return { payload: cutUtf8(text, capBytes), truncated: true, payload_bytes: size };
}

/** The path's ids checked: 400 naming the parameter for a malformed job id or event id. */
export function parseContentIds(jobId: string, eventId: string): { jobId: string; eventId: string } {
  if (!JOB_ID.test(jobId)) throw new AppError('invalid_request', "Invalid path parameter 'jobId': must be a job id (job_ and 20 characters a-z, 2-7)", { param: 'jobId' });
  const id = /^\d{1,19}$/.test(eventId) ? parseEventId(eventId) : undefined;
  if (id === undefined || id === '0') {
    throw new AppError('invalid_request', "Invalid path parameter 'eventId': must be an event id (a decimal integer from 1 to 9223372036854775807)", { param: 'eventId' });
  }
  return { jobId, eventId: id };
}

interface ContentRow {
  job_id: string;
  owner_id: string | number;
  deleted_at: Date | null;
  event_id: string | null;
  turn_seq: number;
  attempt_id: string | null;
  seq: number;
  event_type: string;
  payload: Record<string, unknown>;
  is_error: boolean;
  created_at: Date;
}

/** The job and its event `eventId`: 404 `Run not found` without the job, `Event not found` when the event is not the job's. */
async function findEvent(db: Db, jobId: string, eventId: string): Promise<ContentRow & { event_id: string }> {
  const row = await db('agent_jobs as j')
    .leftJoin('agent_events as e', (join) => {
      join.on('e.job_id', '=', 'j.job_id').andOn('e.event_id', '=', db.raw('?::bigint', [eventId]));
    })
    .where('j.job_id', jobId)
    .first<ContentRow | undefined>(
      'j.job_id', 'j.owner_id', 'j.deleted_at', 'e.event_id', 'e.turn_seq', 'e.attempt_id', 'e.seq', 'e.event_type', 'e.payload', 'e.is_error', 'e.created_at',
    );
  if (!row) throw new AppError('not_found', 'Run not found');
  if (row.event_id === null) throw new AppError('not_found', 'Event not found in this run');
  return row as ContentRow & { event_id: string };
}

/**
 * Reads one event's payload for the operator `by`: finds it (404s above), caps it, records the
 * audit row (administrator and address as the actor; the task owner and the job, event, attempt
 * and sequence ids in `details`) and only then returns it. A failed audit write is 503.
 */
export async function readEventContent(db: Db, ids: { jobId: string; eventId: string }, by: AuditBy): Promise<EventContent> {
  const row = await findEvent(db, ids.jobId, ids.eventId);
  const eventId = String(row.event_id);
  const capped = capPayload(row.payload);
  await auditBeforeDisclose(db, {
    ...by,
    category: 'content',
    action: 'agent.run.event_content.read',
    target: { type: 'event', id: eventId },
    outcome: 'succeeded',
    details: {
      owner_user_id: Number(row.owner_id),
      job_id: row.job_id,
      event_id: eventId,
      attempt_id: row.attempt_id,
      turn_seq: row.turn_seq,
      seq: row.seq,
      event_type: row.event_type,
      job_deleted: row.deleted_at !== null,
      payload_bytes: capped.payload_bytes,
      truncated: capped.truncated,
    },
  });
  return {
    job_id: row.job_id,
    event_id: eventId,
    turn_seq: row.turn_seq,
    attempt_id: row.attempt_id,
    seq: row.seq,
    event_type: row.event_type,
    is_error: row.is_error,
    created_at: row.created_at.toISOString(),
    ...capped,
  };
}
