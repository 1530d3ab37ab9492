/**
 * The owner's server-sent-events stream of one job's event log (docs/agent-event-stream.md). Sends
 * the backlog after the resume point in pages, then follows live events while the job is active (a
 * turn `queued` or `running`), and ends after the backlog once it is not. Every event carries its
 * id, so a client resuming with `Last-Event-ID` gets exactly the rest. Writes wait for `drain` (no
 * unbounded buffering); a comment line keeps idle connections open; a client that goes away
 * releases the subscription at once.
 */
import type { ServerResponse } from 'node:http';
import type { Db } from '../../lib/db';
import type { Logger } from '../../lib/logger';
import { drainOrClose } from '../../lib/http/client-abort';
import type { EventNotifier } from '../../agent/events/event-notifier';
import { listEvents, type StoredEvent } from '../../agent/events/event-store';

export interface JobEventStreamOptions {
  res: ServerResponse;
  db: Db;
  notifier: EventNotifier;
  jobId: string;
  /** Resume point: events with a larger id are sent (`'0'` for all). */
  afterEventId: string;
  /** A `: keep-alive` comment is written after this long without any write. */
  heartbeatMs: number;
  /** Events read per backlog query (held in memory while written). Default 100. */
  pageSize?: number;
  log: Logger;
}

/** One event as an SSE frame: `id`, `event` (the event type) and `data` (the JSON event). */
export function eventFrame(event: StoredEvent): string {
  return `id: ${event.event_id}\nevent: ${event.event_type}\ndata: ${JSON.stringify(event)}\n\n`;
}

/** The frame written last when the stream ends because the job has no active turn. */
export const END_FRAME = 'event: end\ndata: {"job_active":false}\n\n';

/** Whether the job exists, is not deleted and has a turn `queued` or `running`. */
export async function jobIsActive(db: Db, jobId: string): Promise<boolean> {
  const result = await db.raw<{ rows: Array<{ active: boolean }> }>(
    `select exists (
       select 1 from agent_turns t join agent_jobs j on j.job_id = t.job_id
        where t.job_id = ? and j.deleted_at is null and t.state in ('queued', 'running')
     ) as active`,
    [jobId],
  );
  return result.rows[0]?.active === true;
}

/** Resolves on the next wake, after `ms`, or when the client closes; whichever comes first. */
class Waker {
  private woken = false;
  private resolve: (() => void) | undefined;

  wake = (): void => {
    this.woken = true;
    this.resolve?.();
  };

  wait(ms: number): Promise<void> {
    if (this.woken) {
      this.woken = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.resolve = undefined;
        this.woken = false;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.resolve = done;
    });
  }
}

/**
 * Writes the stream to `res` (headers included) until the job is inactive or the client leaves.
 * Errors after the headers are sent become an `event: error` frame, then the stream ends.
 */
export async function streamJobEvents(options: JobEventStreamOptions): Promise<void> {
  const { res, db, notifier, jobId, heartbeatMs, log } = options;
  const pageSize = options.pageSize ?? 100;
  const waker = new Waker();
  let closed = false;
  res.once('close', () => {
    closed = true;
    waker.wake();
  });
  let unsubscribe: (() => void) | undefined;
  let lastWriteAt = Date.now();
  const write = async (chunk: string): Promise<void> => {
    lastWriteAt = Date.now();
    if (!res.write(chunk) && !res.destroyed) await drainOrClose(res);
  };
  let after = options.afterEventId;
  try {
    // No forced `Connection: keep-alive`: Node keeps the connection when the client wants it and closes it after the stream when the client sent `Connection: close`.
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'x-accel-buffering': 'no' });
    res.flushHeaders();
    unsubscribe = notifier.subscribe(jobId, waker.wake);
    while (!closed) {
      // Activity is read before the backlog: events committed with the last turn's end are still sent.
      const active = await jobIsActive(db, jobId);
      for (;;) {
        const page = await listEvents(db, jobId, after, pageSize);
        for (const event of page) {
          if (closed) return;
          await write(eventFrame(event));
          after = event.event_id;
        }
        if (page.length < pageSize || closed) break;
      }
      if (!active) {
        if (!closed) await write(END_FRAME);
        return;
      }
      const idleMs = Date.now() - lastWriteAt;
      if (idleMs >= heartbeatMs) await write(': keep-alive\n\n');
      else await waker.wait(heartbeatMs - idleMs);
    }
  } catch (err) {
    log.warn({ err: err instanceof Error ? err.message : String(err), job_id: jobId }, 'agent event stream failed');
    if (!closed && !res.writableEnded) res.write(`event: error\ndata: ${JSON.stringify({ error: { message: 'Event stream failed; reconnect with Last-Event-ID' } })}\n\n`);
  } finally {
    unsubscribe?.();
    if (!res.writableEnded) res.end();
  }
}
