/**
 * Structured JSON logging (pino). One root logger per process; request loggers are children
 * carrying `request_id`. Secrets are redacted before a line is written: any key named below, at
 * any depth up to {@link REDACT_DEPTH}, has its value replaced by `***`. The scan copies only the
 * objects on the path to a secret, so the common secret-free line costs one pass over its keys.
 */
import pino, { type Logger } from 'pino';
import { BatchedLineSink } from './log-sink';

export type { Logger };

/** Keys whose values never reach a log line. */
export const SECRET_KEYS: ReadonlySet<string> = new Set([
  'authorization', 'x-api-key', 'cookie', 'set-cookie', 'api_key', 'apiKey', 'api_keys', 'password', 'token', 'credential',
  'secret', 'key_material', 'access_token', 'refresh_token',
]);

/** How deep the scan looks: `{ req: { headers: { authorization } } }` is depth 3. */
export const REDACT_DEPTH = 4;

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value) && !(value instanceof Error);
}

/** Returns `obj` itself when it holds no secret, else a copy with the secrets replaced. */
export function redactSecrets(obj: Record<string, unknown>, depth = REDACT_DEPTH): Record<string, unknown> {
  let copy: Record<string, unknown> | undefined;
  for (const key in obj) {
    const value = obj[key];
    let replaced: unknown = value;
    if (SECRET_KEYS.has(key) || SECRET_KEYS.has(key.toLowerCase())) replaced = '***';
    else if (depth > 1 && isPlainObject(value)) replaced = redactSecrets(value, depth - 1);
    if (replaced !== value) (copy ??= { ...obj })[key] = replaced;
  }
  return copy ?? obj;
}

let lastMs = -1;
let lastTime = '';
/** The time a deferred line is stamped with while it is written (see {@link infoSoon}). */
let stampMs: number | undefined;

/**
 * pino's ISO `time` field, formatted once per millisecond: a busy gateway writes several lines
 * per millisecond, and `toISOString` showed in its profile.
 */
export function isoTimeCached(): string {
  const now = stampMs ?? Date.now();
  if (now !== lastMs) {
    lastMs = now;
    lastTime = `,"time":"${new Date(now).toISOString()}"`;
  }
  return lastTime;
}

/** Lines waiting for {@link writeSoonLines}: logger, fields, message, epoch ms, repeated. */
const soon: unknown[] = [];

/**
 * Writes an INFO line a moment later: once the event loop has handled the I/O it is busy with
 * (`setImmediate`), together with the other lines deferred meanwhile. The line is stamped with the
 * time of this call, not of the write. Under load one loop turn ends many requests, and writing
 * their lines back to back instead of each amid its own request's work measured about 12 µs of CPU
 * less per request (docs/gateway-performance.md). Lines logged directly in between come out
 * first; a process exiting meanwhile still writes them (the sink's exit hook drains them first).
 */
export function infoSoon(logger: Logger, fields: object, msg: string): void {
  if (soon.length === 0) setImmediate(writeSoonLines);
  soon.push(logger, fields, msg, Date.now());
}

/** Writes the lines {@link infoSoon} deferred, in order. */
export function writeSoonLines(): void {
  try {
    for (let i = 0; i < soon.length; i += 4) {
      stampMs = soon[i + 3] as number;
      (soon[i] as Logger).info(soon[i + 1] as object, soon[i + 2] as string);
    }
  } finally {
    stampMs = undefined;
    soon.length = 0;
  }
}

export interface LoggerOptions {
  /** Process name written on every line (`gateway`, `api`, `control-worker`, `host-runner`). */
  name: string;
  level: string;
  /** Where lines go; standard output by default. Tests pass a collecting stream. */
  destination?: pino.DestinationStream;
}

/** Standard output in batches (see log-sink.ts), written out synchronously when the process exits. */
function batchedStdout(): pino.DestinationStream {
  const sink = new BatchedLineSink();
  process.once('exit', () => {
    writeSoonLines();
    sink.flushSync();
  });
  return sink;
}

/** Creates the process's root logger. */
export function createLogger(options: LoggerOptions): Logger {
  return pino(
    {
      name: options.name,
      level: options.level,
      base: { service: options.name },
      messageKey: 'msg',
      timestamp: isoTimeCached,
      formatters: {
        level: (label) => ({ level: label }),
        log: (obj) => redactSecrets(obj),
      },
    },
    options.destination ?? batchedStdout(),
  );
}
