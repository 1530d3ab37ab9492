/**
 * The batched log destination against real file descriptors: every line arrives once and in
 * order across many batches, a quiet line is written by the interval, lines queued when a process
 * calls `process.exit` are written at exit, and a reader that stops reading (a FIFO nobody reads)
 * makes the sink drop and count lines instead of growing, then report the count once it drains.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { closeSync, constants, mkdtempSync, openSync, readFileSync, readSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { BatchedLineSink } from '../../lib/log-sink';
import { waitFor } from '../support/wait';

describe('log sink: batched standard output', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'log-sink-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('writes every line once and in order across many batches', async () => {
    const path = join(dir, 'out.log');
    const fd = openSync(path, 'a');
    const sink = new BatchedLineSink({ fd, flushChars: 1000, flushIntervalMs: 10_000 });
    try {
      for (let i = 0; i < 5000; i += 1) {
        sink.write(`{"n":${i}}\n`);
        if (i % 100 === 99) await new Promise((r) => setImmediate(r));
      }
      sink.flush();
      await waitFor(() => readFileSync(path, 'utf8').split('\n').length > 4990, 'the batches');
      sink.close();
      const lines = readFileSync(path, 'utf8').trimEnd().split('\n');
      assert.deepEqual(lines, Array.from({ length: 5000 }, (_, i) => `{"n":${i}}`));
    } finally {
      closeSync(fd);
    }
  });

  it('writes a lone line on the interval', async () => {
    const path = join(dir, 'out.log');
    const fd = openSync(path, 'a');
    const sink = new BatchedLineSink({ fd, flushIntervalMs: 20 });
    try {
      sink.write('quiet\n');
      assert.equal(readFileSync(path, 'utf8'), '', 'not written per line');
      await waitFor(() => readFileSync(path, 'utf8') === 'quiet\n', 'the interval flush');
    } finally {
      sink.close();
      closeSync(fd);
    }
  });

  it('writes queued lines when the process exits through process.exit', () => {
    const path = join(dir, 'out.log');
    const sinkModule = resolve(__dirname, '../../lib/log-sink.ts');
    const script = `
      const { openSync } = require('node:fs');
      const { BatchedLineSink } = require(${JSON.stringify(sinkModule)});
      const sink = new BatchedLineSink({ fd: openSync(${JSON.stringify(path)}, 'a') });
      process.once('exit', () => sink.flushSync());
      for (let i = 0; i < 300; i += 1) sink.write('line ' + i + '\\n');
      process.exit(3);`;
    assert.throws(() => execFileSync(process.execPath, ['--import', 'tsx', '-e', script], { stdio: 'pipe' }), (err: { status?: number }) => err.status === 3);
    assert.deepEqual(readFileSync(path, 'utf8').trimEnd().split('\n'), Array.from({ length: 300 }, (_, i) => `line ${i}`));
  });

  it('drops and counts lines while nobody reads, then says how many once the reader is back', async () => {
    const fifo = join(dir, 'pipe');
    execFileSync('mkfifo', [fifo]);
    // Read-write keeps the FIFO open without a reader; non-blocking makes a full pipe answer EAGAIN.
    const writeFd = openSync(fifo, constants.O_RDWR | constants.O_NONBLOCK);
    const readFd = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
    const sink = new BatchedLineSink({ fd: writeFd, flushChars: 4096, flushIntervalMs: 10_000, maxPendingChars: 256 * 1024 });
    try {
      const line = `${'x'.repeat(99)}\n`;
      for (let i = 0; i < 10_000; i += 1) {
        sink.write(line); // 1 MB in all: far more than the pipe (64 KiB) plus what the sink may hold
        if (i % 50 === 49) await new Promise((r) => setImmediate(r));
      }
      // Read until every line is accounted for: written, or counted by a notice. A notice follows
      // each stretch of drops once the writer moves again (a burst may end in more than one).
      let text = '';
      const chunk = Buffer.alloc(65536);
      const tally = (): { kept: number; noticed: number; notices: number } => {
        let kept = 0;
        let noticed = 0;
        let notices = 0;
        for (const l of text.split('\n')) {
          if (l === line.trimEnd()) kept += 1;
          else if (l.includes('"event":"log_lines_dropped"')) {
            notices += 1;
            noticed += (JSON.parse(l) as { dropped: number }).dropped;
          }
        }
        return { kept, noticed, notices };
      };
      await waitFor(() => {
        for (;;) {
          let n: number;
          try {
            n = readSync(readFd, chunk);
          } catch (err) {
            if ((err as NodeJS.ErrnoException).code === 'EAGAIN') break;
            throw err;
          }
          if (n === 0) break;
          text += chunk.toString('utf8', 0, n);
        }
        sink.flush();
        const { kept, noticed } = tally();
        return kept + noticed === 10_000;
      }, 'every line written or counted');
      const { kept, noticed, notices } = tally();
      assert.ok(notices >= 1 && noticed > 0, 'drops were reported');
      assert.ok(kept < 10_000 && kept > 0, `some lines were written, the rest counted (${kept} + ${noticed})`);
      assert.equal(sink.droppedLines, 0, 'nothing left uncounted');
    } finally {
      sink.close();
      closeSync(readFd);
      closeSync(writeFd);
    }
  });
});
