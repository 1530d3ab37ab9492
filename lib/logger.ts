/**
 * Structured JSON logging (pino). One root logger per process; request loggers are children
 * carrying `request_id`. Secrets are redacted by path before a line is written.
 */
import pino, { type Logger } from 'pino';

export type { Logger };

/** Paths whose values are replaced by `***` wherever they appear in a log object. */
export const redactedPaths: readonly string[] = [
  'authorization', 'x-api-key', 'api_key', 'apiKey', 'api_keys', 'password', 'token', 'credential', 'secret', 'key_material',
  '*.authorization', '*["x-api-key"]', '*.api_key', '*.apiKey', '*.api_keys', '*.password', '*.token', '*.credential',
  '*.secret', '*.key_material', '*.access_token', '*.refresh_token',
  'headers.authorization', 'headers["x-api-key"]', 'headers.cookie',
  'req.headers.authorization', 'req.headers["x-api-key"]', 'req.headers.cookie',
  '*.headers.authorization', '*.headers["x-api-key"]', '*.headers.cookie',
];

export interface LoggerOptions {
  /** Process name written on every line (`gateway`, `api`, `control-worker`, `host-runner`). */
  name: string;
  level: string;
  /** Where lines go; standard output by default. Tests pass a collecting stream. */
  destination?: pino.DestinationStream;
}

/** Creates the process's root logger. */
export function createLogger(options: LoggerOptions): Logger {
  return pino(
    {
      name: options.name,
      level: options.level,
      base: { service: options.name },
      messageKey: 'msg',
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: [...redactedPaths], censor: '***' },
    },
    options.destination ?? pino.destination({ sync: false }),
  );
}
