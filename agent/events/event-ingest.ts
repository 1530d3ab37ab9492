/**
 * Host event ingestion (docs/agent-events.md): a host writes its driver's normalized events for one
 * of its attempts. The write is fenced: inside one transaction the attempt row is read `FOR SHARE`
 * and must belong to the calling host and still be `running`, so an attempt that was finished,
 * abandoned or replaced writes nothing, and finishing an attempt waits for an in-flight batch.
 * `job_id` and `turn_seq` come from the attempt row, never from the body. Hosts may write only
 * driver event types; `turn_*` events belong to the control plane. A `question` event (a native CLI
 * asking the owner) also opens the question for the owner's answer, in the same transaction.
 */
import type { Db } from '../../lib/db';
import { AppError } from '../../lib/errors';
import type { ValidRequestOf } from '../../lib/contracts/endpoint';
import { questionEventPayload, type attemptEvents, type DriverEventType } from '../../lib/contracts/host-api';
import { openQuestions } from '../questions/native-questions';
import { appendEvents } from './event-store';

/** A batch as the API receives it (lib/contracts/host-api.ts `attemptEvents`). */
export type HostEventBatch = ValidRequestOf<typeof attemptEvents>;

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
  // A `question` event opens a native question: its payload must be one (agent/questions/native-questions.ts).
  const questions = batch.events.flatMap((e, index) => {
    if (e.event_type !== 'question') return [];
    const parsed = questionEventPayload.safeParse(e.payload);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      const path = ['events', index, 'payload', ...issue.path].join('.');
      throw new AppError('invalid_request', `Invalid field '${path}': ${issue.message}`, { param: path });
    }
    return [parsed.data];
  });
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
      eventType: e.event_type as DriverEventType,
      payload: e.payload,
      isError: e.is_error ?? false,
    })));
    await openQuestions(trx, { jobId: attempt.job_id, turnSeq: attempt.turn_seq, attemptId }, questions);
    return { accepted: batch.events.length };
  });
}
