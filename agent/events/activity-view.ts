/**
 * The operator's activity view of a run (docs/agent-admin.md): event envelopes in execution (id) order,
 * without payload content. `has_content` says whether a payload was stored; `tool_name` and
 * `tool_use_id` are lifted out of the payload for `tool_use`/`tool_result` only. Reading the
 * content itself is a separate, audited route.
 */
import { z } from 'zod';
import type { Db } from '../../lib/db';
import { AppError } from '../../lib/errors';
import { parseEventId } from './event-store';

export const activityQuerySchema = z.object({
  attempt_id: z.string().min(1).max(128).optional(),
  cursor: z.string().refine((v) => parseEventId(v) !== undefined, 'must be an event id (a decimal integer)').optional(),
  limit: z.coerce.number().int().min(1).max(200).default(100),
}).strict();

export type ActivityQuery = z.infer<typeof activityQuerySchema>;

export interface EventEnvelope {
  event_id: string;
  turn_seq: number;
  attempt_id: string | null;
  seq: number;
  event_type: string;
  created_at: string;
  is_error: boolean;
  has_content: boolean;
  tool_name?: string;
  tool_use_id?: string;
}

export interface ActivityPage {
  events: EventEnvelope[];
  /** Pass as `cursor` for the next page; null when this page is the last. */
  next_cursor: string | null;
}

interface EnvelopeRow {
  event_id: string;
  turn_seq: number;
  attempt_id: string | null;
  seq: number;
  event_type: string;
  created_at: Date;
  is_error: boolean;
  has_content: boolean;
  tool_name: string | null;
  tool_use_id: string | null;
}

const TOOL_TYPES = new Set(['tool_use', 'tool_result']);

function toEnvelope(row: EnvelopeRow): EventEnvelope {
  const envelope: EventEnvelope = {
    event_id: String(row.event_id),
    turn_seq: row.turn_seq,
    attempt_id: row.attempt_id,
    seq: row.seq,
    event_type: row.event_type,
    created_at: row.created_at.toISOString(),
    is_error: row.is_error,
    has_content: row.has_content,
  };
  if (TOOL_TYPES.has(row.event_type)) {
    if (row.tool_name !== null) envelope.tool_name = row.tool_name;
    if (row.tool_use_id !== null) envelope.tool_use_id = row.tool_use_id;
  }
  return envelope;
}

/** One page of a job's envelopes; 404 `Run not found` when the job does not exist. */
export async function listActivity(db: Db, jobId: string, query: ActivityQuery): Promise<ActivityPage> {
  const job = await db('agent_jobs').where({ job_id: jobId }).first<{ job_id: string } | undefined>('job_id');
  if (!job) throw new AppError('not_found', 'Run not found');
  const rows = await db('agent_events')
    .where('job_id', jobId)
    .modify((q) => {
      if (query.attempt_id !== undefined) q.where('attempt_id', query.attempt_id);
      if (query.cursor !== undefined) q.where('event_id', '>', parseEventId(query.cursor)!);
    })
    .orderBy('event_id', 'asc')
    .limit(query.limit + 1)
    .select<EnvelopeRow[]>(
      'event_id', 'turn_seq', 'attempt_id', 'seq', 'event_type', 'created_at', 'is_error',
      db.raw(`payload <> '{}'::jsonb as has_content`),
      // Drivers name the tool `tool_name` (or `name`) and its call `tool_use_id` (or `id`); see docs/agent-events.md.
      db.raw(`case when jsonb_typeof(coalesce(payload->'tool_name', payload->'name')) = 'string' then coalesce(payload->>'tool_name', payload->>'name') end as tool_name`),
      db.raw(`case when jsonb_typeof(coalesce(payload->'tool_use_id', payload->'id')) = 'string' then coalesce(payload->>'tool_use_id', payload->>'id') end as tool_use_id`),
    );
  const page = rows.slice(0, query.limit).map(toEnvelope);
  return { events: page, next_cursor: rows.length > query.limit ? page[page.length - 1]!.event_id : null };
}
