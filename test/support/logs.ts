/**
 * A logger whose lines are collected in memory, for asserting on log events.
 */
import { Writable } from 'node:stream';
import { createLogger, type Logger } from '../../lib/logger';

export interface CapturedLogs {
  log: Logger;
  lines: Array<Record<string, unknown>>;
}

export function captureLogs(name = 'test', level = 'debug'): CapturedLogs {
  const lines: Array<Record<string, unknown>> = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const line of chunk.toString('utf8').split('\n')) if (line) lines.push(JSON.parse(line) as Record<string, unknown>);
      cb();
    },
  });
  return { log: createLogger({ name, level, destination }), lines };
}
