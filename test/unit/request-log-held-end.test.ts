/**
 * Held ends (gateway/request-log/held-end.ts): a real HTTP server whose responses are
 * `HeldEndResponse`s, the real writer and a real journal directory. When the journal write of a
 * turn's rows happens, not one byte of those answers (of a stream: not one byte of its last
 * frames) has been handed to the socket; the client then reads the whole answer. A response
 * whose row is not logged is released at once, and a response nobody holds ends as usual.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { holdEnd, holdTail } from '../../gateway/request-log/held-end';
import { Journal, type JournalSegment } from '../../gateway/request-log/journal';
import { Spool } from '../../gateway/request-log/spool';
import { RequestLogWriter } from '../../gateway/request-log/writer';
import { HeldEndResponse } from '../../gateway/request-log/held-end';
import { serve, type Serving } from '../../lib/http/serve';
import { captureLogs } from '../support/logs';
import { entry, FakeSink } from '../support/request-log-fakes';

/** A journal that notes, at each append, how many bytes each watched response's socket had taken. */
class WatchedJournal extends Journal {
  readonly seen: Array<Map<string, number>> = [];
  /** The sockets of the watched requests (a response lets go of its socket once it finished). */
  readonly watched = new Map<string, Socket>();
  override append(text: string, rows: number): JournalSegment | undefined {
    this.seen.push(new Map([...this.watched].map(([id, socket]) => [id, socket.bytesWritten])));
    return super.append(text, rows);
  }
}

describe('request log: an answer\'s last bytes wait for its journal write', () => {
  const logs = captureLogs('held-end', 'info');
  let dir: string;
  let journal: WatchedJournal;
  let writer: RequestLogWriter;
  let serving: Serving;
  /** What the listener does with a request, by path. */
  let handle: (req: IncomingMessage, res: ServerResponse) => void;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rl-held-'));
    const spool = new Spool({ dir, maxBytes: 1024 * 1024 });
    journal = new WatchedJournal({ dir, stamp: spool.stamp });
    writer = new RequestLogWriter({ sink: new FakeSink(), spool, journal, log: logs.log, batchSize: 100, flushIntervalMs: 1000, maxQueue: 1000, writeTimeoutMs: 50 });
    serving = await serve(Object.assign((req: IncomingMessage, res: ServerResponse) => handle(req, res), { responseClass: HeldEndResponse }), { host: '127.0.0.1', port: 0 });
  });
  afterEach(async () => {
    await serving.close(100);
    await writer.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A request answered by `answer`, its record pushed to the writer (held when `held`). */
  function logged(id: string, answer: (res: ServerResponse) => void, held = true): void {
    handle = (req, res) => {
      journal.watched.set(id, req.socket);
      const record = entry(Number(id.replace(/\D/g, '')) || 1, id);
      if (held) record.heldResponse = holdEnd(res);
      answer(res);
      writer.push(record);
    };
  }

  it('hands no byte of a plain answer to the socket before its row is journaled', async () => {
    logged('plain', (res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"answer":42}');
    });
    const res = await fetch(`${serving.url}/`);
    assert.equal(await res.text(), '{"answer":42}');
    assert.equal(journal.seen.length, 1);
    assert.equal(journal.seen[0]!.get('plain'), 0, 'nothing was written when the row was journaled');
  });

  it('holds a stream\'s last frames (written after holdTail) with its end, not the frames before', async () => {
    let early = 0;
    logged('stream', (res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"delta":"a"}\n\n');
      early = res.socket!.bytesWritten;
      holdTail(res);
      res.write('data: [DONE]\n\n');
      res.end();
    });
    const res = await fetch(`${serving.url}/`);
    assert.equal(await res.text(), 'data: {"delta":"a"}\n\ndata: [DONE]\n\n');
    assert.ok(early > 0, 'the first frame went out at once');
    assert.equal(journal.seen[0]!.get('stream'), early, 'the last frame and the end waited for the journal');
  });

  it('without a hold, the answer is on the socket before the journal write (what the hold prevents)', async () => {
    logged('bare', (res) => res.end('plain'), false);
    const res = await fetch(`${serving.url}/`);
    assert.equal(await res.text(), 'plain');
    assert.ok(journal.seen[0]!.get('bare')! > 0);
  });

  it('keeps writableEnded true while the end waits, and ignores a second end', async () => {
    let states: boolean[] = [];
    handle = (_req, res) => {
      const held = holdEnd(res)!;
      res.end('one');
      states = [res.writableEnded, res.headersSent];
      res.end('two');
      setImmediate(() => held.release());
    };
    const res = await fetch(`${serving.url}/`);
    assert.equal(await res.text(), 'one');
    assert.deepEqual(states, [true, false]);
  });
});
