/**
 * Ordering and safety checks over what PostgreSQL holds after the ordering run (agent_turns,
 * agent_attempts, agent_events). Per job, event ids are assigned under a per-job lock held to
 * commit, so event id order is the exact order in which a chat's state changes committed; the
 * "turn started before an earlier turn ended" check uses it. Timestamps (`now()`, the start of
 * each writing transaction) are used for attempt overlap, as the issue asks.
 */
import type { Db } from '../../lib/db';

export const VIOLATION_KINDS = [
  'turn_started_before_earlier_turn_ended',
  'overlapping_attempts_in_chat',
  'cancelled_queued_turn_started',
  'turn_never_finished',
  'attempt_never_finished',
  'duplicate_event',
  'out_of_order_event',
  'missing_turn_event',
  'running_attempts_above_slots',
] as const;
export type ViolationKind = (typeof VIOLATION_KINDS)[number];

export interface Violations {
  counts: Record<ViolationKind, number>;
  /** Up to three examples per kind. */
  examples: Partial<Record<ViolationKind, string[]>>;
}

interface TurnRow { job_id: string; turn_id: string; seq: number; state: string; started_at: Date | null; finished_at: Date | null }
interface AttemptRow { attempt_id: string; turn_id: string; job_id: string; state: string; started_at: Date; finished_at: Date | null }
interface EventRow { event_id: string; job_id: string; turn_seq: number; attempt_id: string | null; seq: number; event_type: string }

const TURN_ENDS = new Set(['turn_completed', 'turn_failed', 'turn_cancelled']);
const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

class Tally {
  readonly counts = Object.fromEntries(VIOLATION_KINDS.map((k) => [k, 0])) as Record<ViolationKind, number>;
  readonly examples: Partial<Record<ViolationKind, string[]>> = {};
  add(kind: ViolationKind, example: string): void {
    this.counts[kind] += 1;
    const list = (this.examples[kind] ??= []);
    if (list.length < 3) list.push(example);
  }
}

function groupBy<T>(rows: readonly T[], key: (row: T) => string): Map<string, T[]> {
  const map = new Map<string, T[]>();
  for (const row of rows) {
    const list = map.get(key(row));
    if (list) list.push(row);
    else map.set(key(row), [row]);
  }
  return map;
}

/** Walks one job's events in id order. */
function checkJobEvents(tally: Tally, jobId: string, turns: TurnRow[], events: EventRow[]): void {
  const ended = new Set<number>();
  const started = new Set<string>();
  const startedTurns = new Set<number>();
  const queued = new Set<number>();
  const driverSeqs = new Set<string>();
  const lastDriverSeq = new Map<string, number>();
  let lastTurnSeq = 0;
  let lastQueued = 0;
  for (const e of events) {
    const where = `${jobId} turn ${e.turn_seq} event ${e.event_id} (${e.event_type})`;
    if (e.event_type === 'turn_queued') {
      if (queued.has(e.turn_seq)) tally.add('duplicate_event', where);
      if (e.turn_seq <= lastQueued) tally.add('out_of_order_event', `${where}: queued after turn ${lastQueued}`);
      queued.add(e.turn_seq);
      lastQueued = Math.max(lastQueued, e.turn_seq);
      continue;
    }
    if (!queued.has(e.turn_seq)) tally.add('out_of_order_event', `${where}: before the turn's turn_queued`);
    // The owner cancelling a queued turn ends it at once, whatever runs: like turn_queued it may
    // interleave with earlier turns' events; every other event follows the turns' order.
    const ownerCancel = e.event_type === 'turn_cancelled' && e.attempt_id === null;
    if (!ownerCancel) {
      if (e.turn_seq < lastTurnSeq) tally.add('out_of_order_event', `${where}: after an event of turn ${lastTurnSeq}`);
      lastTurnSeq = Math.max(lastTurnSeq, e.turn_seq);
    }
    if (e.event_type === 'turn_started') {
      const key = e.attempt_id ?? `turn-${e.turn_seq}`;
      if (started.has(key)) tally.add('duplicate_event', where);
      started.add(key);
      startedTurns.add(e.turn_seq);
      for (const earlier of turns) {
        if (earlier.seq < e.turn_seq && !ended.has(earlier.seq)) tally.add('turn_started_before_earlier_turn_ended', `${where}: turn ${earlier.seq} had not ended`);
      }
      if (ended.has(e.turn_seq)) tally.add('out_of_order_event', `${where}: after the turn ended`);
    } else if (TURN_ENDS.has(e.event_type)) {
      if (ended.has(e.turn_seq)) tally.add('duplicate_event', `${where}: second end of the turn`);
      ended.add(e.turn_seq);
    } else {
      const key = `${e.attempt_id ?? '-'}:${e.seq}`;
      if (driverSeqs.has(key)) tally.add('duplicate_event', where);
      driverSeqs.add(key);
      if (!e.attempt_id || !started.has(e.attempt_id)) tally.add('out_of_order_event', `${where}: driver event outside a started attempt`);
      if (ended.has(e.turn_seq)) tally.add('out_of_order_event', `${where}: driver event after the turn ended`);
      const previous = lastDriverSeq.get(e.attempt_id ?? '-');
      if (previous !== undefined && e.seq <= previous) tally.add('out_of_order_event', `${where}: seq ${e.seq} after ${previous}`);
      lastDriverSeq.set(e.attempt_id ?? '-', e.seq);
    }
  }
  for (const turn of turns) {
    const what = `${jobId} turn ${turn.seq} (${turn.state})`;
    if (!queued.has(turn.seq)) tally.add('missing_turn_event', `${what}: no turn_queued`);
    if (TERMINAL.has(turn.state) && !ended.has(turn.seq)) tally.add('missing_turn_event', `${what}: no end event`);
    if (turn.started_at && !startedTurns.has(turn.seq)) tally.add('missing_turn_event', `${what}: no turn_started`);
  }
}

function checkAttempts(tally: Tally, jobId: string, attempts: AttemptRow[]): void {
  const sorted = [...attempts].sort((a, b) => a.started_at.getTime() - b.started_at.getTime());
  for (let i = 0; i < sorted.length; i += 1) {
    const a = sorted[i]!;
    if (a.state === 'running' || a.finished_at === null) tally.add('attempt_never_finished', `${jobId} attempt ${a.attempt_id} (${a.state})`);
    for (let j = i + 1; j < sorted.length; j += 1) {
      const b = sorted[j]!;
      if (a.finished_at === null || a.finished_at.getTime() > b.started_at.getTime()) {
        tally.add('overlapping_attempts_in_chat', `${jobId}: ${a.attempt_id} [${a.started_at.toISOString()} … ${a.finished_at?.toISOString() ?? 'open'}] and ${b.attempt_id} started ${b.started_at.toISOString()}`);
      }
    }
  }
}

export interface CheckInput {
  db: Db;
  jobIds: readonly string[];
  queuedCancels: ReadonlyArray<{ jobId: string; seq: number }>;
  maxSampledRunning: number;
  slots: number;
}

export async function checkViolations(input: CheckInput): Promise<Violations> {
  const { db, jobIds } = input;
  const tally = new Tally();
  const turns = await db('agent_turns').whereIn('job_id', jobIds).orderBy(['job_id', 'seq']).select<TurnRow[]>('job_id', 'turn_id', 'seq', 'state', 'started_at', 'finished_at');
  const attempts = await db('agent_attempts').whereIn('job_id', jobIds).select<AttemptRow[]>('attempt_id', 'turn_id', 'job_id', 'state', 'started_at', 'finished_at');
  const events = await db('agent_events').whereIn('job_id', jobIds).orderBy('event_id').select<EventRow[]>('event_id', 'job_id', 'turn_seq', 'attempt_id', 'seq', 'event_type');
  const turnsByJob = groupBy(turns, (t) => t.job_id);
  const attemptsByJob = groupBy(attempts, (a) => a.job_id);
  const eventsByJob = groupBy(events, (e) => e.job_id);
  for (const jobId of jobIds) {
    const jobTurns = turnsByJob.get(jobId) ?? [];
    for (const turn of jobTurns) {
      if (!TERMINAL.has(turn.state)) tally.add('turn_never_finished', `${jobId} turn ${turn.seq} (${turn.state})`);
    }
    checkJobEvents(tally, jobId, jobTurns, eventsByJob.get(jobId) ?? []);
    checkAttempts(tally, jobId, attemptsByJob.get(jobId) ?? []);
  }
  const turnIds = new Map(turns.map((t) => [`${t.job_id}:${t.seq}`, t]));
  const attemptTurns = new Set(attempts.map((a) => a.turn_id));
  for (const cancel of input.queuedCancels) {
    const turn = turnIds.get(`${cancel.jobId}:${cancel.seq}`);
    if (!turn || turn.state !== 'cancelled' || turn.started_at !== null || attemptTurns.has(turn.turn_id)) {
      tally.add('cancelled_queued_turn_started', `${cancel.jobId} turn ${cancel.seq} (${turn?.state ?? 'missing'}, started_at ${turn?.started_at?.toISOString() ?? 'null'})`);
    }
  }
  if (input.maxSampledRunning > input.slots) tally.add('running_attempts_above_slots', `peak ${input.maxSampledRunning} running attempts with ${input.slots} slots`);
  return { counts: tally.counts, examples: tally.examples };
}

/** Peak number of attempts whose [started_at, finished_at) intervals overlap (DB timestamps). */
export async function peakOverlappingAttempts(db: Db, jobIds: readonly string[]): Promise<number> {
  const attempts = await db('agent_attempts').whereIn('job_id', jobIds).select<AttemptRow[]>('started_at', 'finished_at');
  const edges = attempts.flatMap((a) => [
    { at: a.started_at.getTime(), delta: 1 },
    { at: (a.finished_at ?? new Date(8.64e15)).getTime(), delta: -1 },
  ]).sort((x, y) => x.at - y.at || x.delta - y.delta);
  let running = 0;
  let peak = 0;
  for (const edge of edges) {
    running += edge.delta;
    peak = Math.max(peak, running);
  }
  return peak;
}
