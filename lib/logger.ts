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

/**
 * pino's ISO `time` field, formatted once per millisecond: a busy gateway writes several lines
 * per millisecond, and `toISOString` showed in its profile.
 */
export function isoTimeCached(): string {
  const now = Date.now();
  if (now !== lastMs) {
    lastMs = now;
    lastTime = `,"time":"${new Date(now).toISOString()}"`;
  }
  return lastTime;
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
  process.once('exit', () => sink.flushSync());
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
