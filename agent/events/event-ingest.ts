/**
 * Host event ingestion (spec 5.4, 6.2): a host writes its driver's normalized events for one of its
 * attempts. The write is fenced: inside one transaction the attempt row is read `FOR SHARE` and
 * must belong to the calling host and still be `running`, so an attempt that was finished,
 * abandoned or replaced writes nothing, and finishing an attempt waits for an in-flight batch.
 * `job_id` and `turn_seq` come from the attempt row, never from the body. Hosts may write only
 * driver event types; `turn_*` events belong to the control plane.
 */
import { z } from 'zod';
import type { Db } from '../../lib/db';
import { AppError } from '../../lib/errors';
import { appendEvents } from './event-store';

/** Event types a host (driver) may write. */
export const DRIVER_EVENT_TYPES = ['message', 'tool_use', 'tool_result', 'retry', 'notice'] as const;

/** Events per request. */
export const MAX_EVENTS_PER_BATCH = 100;
/** Serialized size of one event's payload. */
export const MAX_EVENT_PAYLOAD_BYTES = 256 * 1024;
/** Request body limit: a full batch of maximal payloads plus envelope overhead. */
export const MAX_INGEST_BODY_BYTES = MAX_EVENTS_PER_BATCH * (MAX_EVENT_PAYLOAD_BYTES + 1024);

const CONTROL_TYPE = /^turn_/;

const hostEventSchema = z.object({
  seq: z.number().int().min(0).max(2_147_483_647),
  event_type: z.string().superRefine((value, ctx) => {
    if (CONTROL_TYPE.test(value)) ctx.addIssue({ code: 'custom', message: `'${value}' is a control-plane event type; hosts may write only ${DRIVER_EVENT_TYPES.join(', ')}` });
    else if (!(DRIVER_EVENT_TYPES as readonly string[]).includes(value)) ctx.addIssue({ code: 'custom', message: `unknown event type; expected one of ${DRIVER_EVENT_TYPES.join(', ')}` });
  }),
  payload: z.record(z.string(), z.unknown()).superRefine((value, ctx) => {
    if (Buffer.byteLength(JSON.stringify(value)) > MAX_EVENT_PAYLOAD_BYTES) {
      ctx.addIssue({ code: 'custom', message: `payload is larger than ${MAX_EVENT_PAYLOAD_BYTES} bytes serialized` });
    }
  }),
  is_error: z.boolean().optional(),
}).strict();

export const hostEventBatchSchema = z.object({
  events: z.array(hostEventSchema).min(1).max(MAX_EVENTS_PER_BATCH).superRefine((events, ctx) => {
    const seen = new Set<number>();
    events.forEach((e, index) => {
      if (seen.has(e.seq)) ctx.addIssue({ code: 'custom', path: [index, 'seq'], message: `seq ${e.seq} appears twice in the batch` });
      seen.add(e.seq);
    });
  }),
}).strict();

export type HostEventBatch = z.infer<typeof hostEventBatchSchema>;

interface AttemptFenceRow {
  job_id: string;
  host_id: string;
  state: string;
  turn_seq: number;
}

/**
 * Stores a batch for `attemptId` written by `hostId` (already authenticated). 409 `Attempt is not
 * current` when the attempt is unknown, another host's or no longer running; nothing is written then.
 * Returns how many events were accepted (already-stored seqs of a retried batch count as accepted).
 */
export async function ingestHostEvents(db: Db, options: { hostId: string; attemptId: string; batch: HostEventBatch }): Promise<{ accepted: number }> {
  const { hostId, attemptId, batch } = options;
  return db.transaction(async (trx) => {
    const attempt = await trx('agent_attempts as a')
      .join('agent_turns as t', 't.turn_id', 'a.turn_id')
      .where('a.attempt_id', attemptId)
      .forShare('a')
      .first<AttemptFenceRow | undefined>('a.job_id', 'a.host_id', 'a.state', 't.seq as turn_seq');
    if (!attempt || attempt.host_id !== hostId || attempt.state !== 'running') {
      throw new AppError('conflict', 'Attempt is not current');
    }
    await appendEvents(trx, attempt.job_id, batch.events.map((e) => ({
      turnSeq: attempt.turn_seq,
      attemptId,
      seq: e.seq,
      eventType: e.event_type as (typeof DRIVER_EVENT_TYPES)[number],
      payload: e.payload,
      isError: e.is_error ?? false,
    })));
    return { accepted: batch.events.length };
  });
}
