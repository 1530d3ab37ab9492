/**
 * Queue → first event latency, one turn at a time on an otherwise idle stack, as an owner sees it:
 * from the moment `POST` (new chat or new turn) returns to the arrival on the job's SSE stream of
 * (a) the turn's `turn_started` and (b) its first driver event (the no-op agent's `message`).
 * Cold = the first turn of a new chat (its container is created during the turn); warm = a
 * follow-up turn of a chat whose container already runs.
 */
import type { AgentStack } from '../../test/support/agent-stack';
import { addTurn, createChat, followEvents, type StreamedEvent } from './client';

const TURN_ENDS = new Set(['turn_completed', 'turn_failed', 'turn_cancelled']);

export interface TurnLatency {
  /** ms from POST returning to `turn_started` on the stream. */
  startedMs: number;
  /** ms from POST returning to the first driver event on the stream. */
  firstDriverEventMs: number;
}

export interface LatencyResult {
  cold: TurnLatency[];
  warm: TurnLatency[];
}

/** Follows one turn's events to its end and measures from `postedAt`. */
async function measureTurn(stack: AgentStack, options: { jobId: string; seq: number; postedAt: number; afterEventId?: string }): Promise<{ latency: TurnLatency; lastEventId: string }> {
  const ofTurn = (e: StreamedEvent) => e.turn_seq === options.seq;
  const events = await followEvents(stack, {
    jobId: options.jobId, afterEventId: options.afterEventId, timeoutMs: 120_000,
    until: (e) => ofTurn(e) && TURN_ENDS.has(e.event_type),
  });
  const end = events.find((e) => ofTurn(e) && TURN_ENDS.has(e.event_type));
  if (end?.event_type !== 'turn_completed') throw new Error(`turn ${options.seq} of ${options.jobId} ended with ${end?.event_type ?? 'nothing'}`);
  const started = events.find((e) => ofTurn(e) && e.event_type === 'turn_started');
  const driver = events.find((e) => ofTurn(e) && e.attempt_id !== null && !e.event_type.startsWith('turn_'));
  if (!started || !driver) throw new Error(`turn ${options.seq} of ${options.jobId}: no turn_started or driver event on the stream`);
  return {
    latency: { startedMs: started.at - options.postedAt, firstDriverEventMs: driver.at - options.postedAt },
    lastEventId: end.id,
  };
}

/** `chats` new chats (cold turns), each followed by `followUps` turns (warm), strictly one at a time. */
export async function measureLatency(stack: AgentStack, options: { chats: number; followUps: number; progress: (line: string) => void }): Promise<LatencyResult> {
  const result: LatencyResult = { cold: [], warm: [] };
  for (let i = 0; i < options.chats; i += 1) {
    const { jobId } = await createChat(stack, { prompt: `latency chat ${i}`, talk: true });
    const postedAt = performance.now();
    let measured = await measureTurn(stack, { jobId, seq: 1, postedAt });
    result.cold.push(measured.latency);
    for (let seq = 2; seq <= options.followUps + 1; seq += 1) {
      const added = await addTurn(stack, jobId, `follow-up ${seq}`);
      const turnPostedAt = performance.now();
      measured = await measureTurn(stack, { jobId, seq: added, postedAt: turnPostedAt, afterEventId: measured.lastEventId });
      result.warm.push(measured.latency);
    }
    if ((i + 1) % 5 === 0) options.progress(`latency: ${i + 1}/${options.chats} chats (${result.cold.length} cold, ${result.warm.length} warm turns)`);
  }
  return result;
}

/** Nearest-rank percentile of `values` (ms). */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}
