/**
 * The owner's side of the control-plane bench: create chats, add and cancel turns over the API,
 * follow a job's server-sent-event stream (`GET /v1/agent/jobs/:id/events`) as owners do, and a
 * small bounded-concurrency pool for submitting many requests at once.
 */
import type { Db } from '../../lib/db';
import { AGENT_MODEL, ownerCall, type AgentStack } from '../../test/support/agent-stack';

/** The stack plus the bench's own small pool for its polling and checks (the stack's pool is left to the stack). */
export type BenchStack = AgentStack & { observer: Db };

/** The no-op CLI agent: one `result` line; with `BENCH_TALK` set in the chat's env it first says hi. */
export const NOOP_CLI_COMMAND = `bash -c 'if [ -n "$BENCH_TALK" ]; then echo "{\\"type\\":\\"assistant\\",\\"text\\":\\"hi\\"}"; fi; echo "{\\"type\\":\\"result\\",\\"text\\":\\"ok\\"}"'`;

export interface CreatedJob {
  jobId: string;
}

async function expectStatus(res: Response, status: number, what: string): Promise<unknown> {
  const text = await res.text();
  if (res.status !== status) throw new Error(`${what}: HTTP ${res.status} ${text.slice(0, 300)}`);
  return JSON.parse(text) as unknown;
}

/** `POST /v1/agent/jobs` with the CLI driver; `talk` makes the no-op agent emit one `message`. */
export async function createChat(stack: AgentStack, options: { prompt: string; talk?: boolean }): Promise<CreatedJob> {
  const res = await ownerCall(stack, 'POST', '/v1/agent/jobs', {
    prompt: options.prompt, model: AGENT_MODEL, repo: null, driver: 'cli', ...(options.talk ? { env: { BENCH_TALK: '1' } } : {}),
  });
  const body = (await expectStatus(res, 201, 'create job')) as { job_id: string };
  return { jobId: body.job_id };
}

/** `POST /v1/agent/jobs/:id/turns`; returns the new turn's seq. */
export async function addTurn(stack: AgentStack, jobId: string, prompt: string): Promise<number> {
  const res = await ownerCall(stack, 'POST', `/v1/agent/jobs/${jobId}/turns`, { prompt });
  return ((await expectStatus(res, 201, 'add turn')) as { seq: number }).seq;
}

/** What a cancel answered: `cancelled` (was queued), `running` (stop requested) or `conflict` (409, already finished). */
export type CancelAnswer = 'cancelled' | 'running' | 'conflict';

export async function cancelTurn(stack: AgentStack, jobId: string, seq: number): Promise<CancelAnswer> {
  const res = await ownerCall(stack, 'POST', `/v1/agent/jobs/${jobId}/turns/${seq}/cancel`);
  if (res.status === 409) {
    await res.text();
    return 'conflict';
  }
  const body = (await expectStatus(res, 200, 'cancel turn')) as { state: string };
  return body.state === 'cancelled' ? 'cancelled' : 'running';
}

export interface StreamedEvent {
  id: string;
  event_type: string;
  turn_seq: number;
  attempt_id: string | null;
  /** `performance.now()` when the frame arrived. */
  at: number;
}

/**
 * Follows the job's event stream from `afterEventId` and resolves with the events received up to
 * and including the first one `until` accepts (or all of them when the server ends the stream).
 */
export async function followEvents(stack: AgentStack, options: { jobId: string; afterEventId?: string; until: (e: StreamedEvent) => boolean; timeoutMs: number }): Promise<StreamedEvent[]> {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(new Error(`event stream of ${options.jobId}: timed out`)), options.timeoutMs);
  const events: StreamedEvent[] = [];
  try {
    const res = await fetch(`${stack.api.url}/v1/agent/jobs/${options.jobId}/events`, {
      headers: { authorization: `Bearer ${stack.ownerKey}`, ...(options.afterEventId ? { 'last-event-id': options.afterEventId } : {}) },
      signal: abort.signal,
    });
    if (res.status !== 200 || !res.body) throw new Error(`event stream of ${options.jobId}: HTTP ${res.status}`);
    const decoder = new TextDecoder();
    let buffer = '';
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      const at = performance.now();
      buffer += decoder.decode(chunk, { stream: true });
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const frame = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const event = parseFrame(frame, at);
        if (!event) continue;
        events.push(event);
        if (options.until(event)) {
          abort.abort();
          return events;
        }
      }
    }
    return events;
  } catch (err) {
    if (abort.signal.aborted && events.length > 0 && options.until(events[events.length - 1]!)) return events;
    throw err;
  } finally {
    clearTimeout(timer);
  }
}

function parseFrame(frame: string, at: number): StreamedEvent | undefined {
  const id = /^id: (.+)$/m.exec(frame)?.[1];
  const data = /^data: (.+)$/m.exec(frame)?.[1];
  if (!id || !data) return undefined;
  const parsed = JSON.parse(data) as { event_type: string; turn_seq: number; attempt_id: string | null };
  return { id, event_type: parsed.event_type, turn_seq: parsed.turn_seq, attempt_id: parsed.attempt_id, at };
}

/** Runs `task(item)` for every item with at most `concurrency` running at once. */
export async function pool<T>(items: readonly T[], concurrency: number, task: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const index = next;
      next += 1;
      await task(items[index]!, index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
