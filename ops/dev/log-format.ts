/**
 * How `npm start` shows its processes' log lines (docs/dev-stack.md "Terminal output"). On a
 * terminal, each pino JSON line becomes `HH:MM:SS LEVEL [process] message key=value…`, coloured by
 * level, without the fields every line carries (pid, hostname, name, service, time, level); an error's
 * stack follows on indented lines. Elsewhere (a pipe, a file, CI) lines stay JSON, prefixed with
 * `[process]` as before. A line that is not a pino JSON object passes through unchanged after the
 * prefix.
 */

/** pino's numeric levels, and the label and colour each gets. */
const LEVELS: ReadonlyArray<{ min: number; label: string; colour: string }> = [
  { min: 60, label: 'FATAL', colour: '\u001b[1;35m' },
  { min: 50, label: 'ERROR', colour: '\u001b[31m' },
  { min: 40, label: 'WARN', colour: '\u001b[33m' },
  { min: 30, label: 'INFO', colour: '\u001b[32m' },
  { min: 20, label: 'DEBUG', colour: '\u001b[34m' },
  { min: 0, label: 'TRACE', colour: '\u001b[90m' },
];
const RESET = '\u001b[0m';
const DIM = '\u001b[2m';
const BOLD = '\u001b[1m';

/** The level labels by severity, for callers that filter (`WARN` and above…). */
export const LEVEL_VALUES = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60 } as const;

/** Fields pino puts on every line: not repeated in the readable form. */
const HIDDEN = new Set(['level', 'time', 'pid', 'hostname', 'name', 'service', 'msg', 'v']);
/** Fields of an `http_request` line folded into its message or left to the log file. */
const HTTP_REQUEST_FOLDED = new Set(['event', 'method', 'path', 'status', 'duration_ms', 'request_id', 'completed', 'remote_ip', 'peer_ip', 'ip_source', 'user_agent', 'host']);
/** Longest value shown for one field (objects are shown as compact JSON, cut here). */
const MAX_VALUE_CHARS = 200;

export interface FormatOptions {
  /** The process name shown in brackets. */
  process: string;
  /** ANSI colours (a terminal). */
  colour: boolean;
  /** `utc`: times in UTC (tests); default the terminal's local time. */
  clock?: 'local' | 'utc';
}

/** A parsed pino line (its `level` as a number), or undefined when `line` is not a JSON object with a pino level. */
export function parsePinoLine(line: string): Record<string, unknown> | undefined {
  if (!line.startsWith('{')) return undefined;
  try {
    const parsed = JSON.parse(line) as unknown;
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return undefined;
    const record = parsed as Record<string, unknown>;
    // lib/logger.ts writes level labels (`"level":"warn"`); plain pino writes numbers.
    const level = typeof record.level === 'string' ? LEVEL_VALUES[record.level as keyof typeof LEVEL_VALUES] : record.level;
    return typeof level === 'number' ? { ...record, level } : undefined;
  } catch {
    return undefined;
  }
}

/** The level label of a pino level number (`INFO`, `WARN`…). */
export function levelLabel(level: number): string {
  return (LEVELS.find((l) => level >= l.min) ?? LEVELS[LEVELS.length - 1]!).label;
}

function clockOf(time: unknown, clock: 'local' | 'utc'): string {
  // The processes write ISO strings (lib/logger.ts); plain pino writes epoch milliseconds.
  const parsed = typeof time === 'number' || typeof time === 'string' ? new Date(time) : new Date(Number.NaN);
  const date = Number.isNaN(parsed.getTime()) ? new Date() : parsed;
  const parts = clock === 'utc'
    ? [date.getUTCHours(), date.getUTCMinutes(), date.getUTCSeconds()]
    : [date.getHours(), date.getMinutes(), date.getSeconds()];
  return parts.map((n) => String(n).padStart(2, '0')).join(':');
}

function valueText(value: unknown): string {
  let text: string;
  if (typeof value === 'string') text = /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value);
  else if (value === null || typeof value !== 'object') text = String(value);
  else text = JSON.stringify(value) ?? '';
  return text.length > MAX_VALUE_CHARS ? `${text.slice(0, MAX_VALUE_CHARS - 1)}…` : text;
}

/** `err` as pino serializes it: its message inline, its stack (when any) returned apart. */
function errorParts(err: unknown): { inline: string; stack: string | undefined } {
  if (err === null || typeof err !== 'object') return { inline: valueText(err), stack: undefined };
  const e = err as { message?: unknown; stack?: unknown; type?: unknown };
  const message = typeof e.message === 'string' ? e.message : JSON.stringify(err);
  const stack = typeof e.stack === 'string' ? e.stack.split('\n').slice(1).join('\n') : undefined;
  return { inline: valueText(message), stack: stack || undefined };
}

/** The readable form of one parsed pino line (no trailing newline). */
export function formatRecord(record: Record<string, unknown>, options: FormatOptions): string {
  const level = typeof record.level === 'number' ? record.level : 30;
  const spec = LEVELS.find((l) => level >= l.min) ?? LEVELS[LEVELS.length - 1]!;
  const paint = (code: string, text: string): string => (options.colour ? `${code}${text}${RESET}` : text);
  const fields: string[] = [];
  let stack: string | undefined;
  const http = record.event === 'http_request';
  const message = http ? httpRequestMessage(record) : typeof record.msg === 'string' ? record.msg : '';
  for (const [key, value] of Object.entries(record)) {
    if (HIDDEN.has(key) || value === undefined || (http && HTTP_REQUEST_FOLDED.has(key))) continue;
    // A value the message already says (`event` equal to it, a path or variable it names) is not repeated.
    if (typeof value === 'string' && value.length >= 3 && message.includes(value)) continue;
    if (key === 'err' || key === 'error') {
      const parts = errorParts(value);
      fields.push(`${paint(DIM, `${key}=`)}${parts.inline}`);
      stack = parts.stack;
      continue;
    }
    fields.push(`${paint(DIM, `${key}=`)}${valueText(value)}`);
  }
  const head = [
    paint(DIM, clockOf(record.time, options.clock ?? 'local')),
    paint(spec.colour, spec.label.padEnd(5)),
    paint(BOLD, `[${options.process}]`),
    level >= LEVEL_VALUES.warn ? paint(spec.colour, indentLines(message)) : indentLines(message),
    ...fields,
  ].filter((part) => part !== '').join(' ');
  if (!stack) return head;
  return `${head}\n${paint(DIM, stack.split('\n').map((l) => `    ${l.trim()}`).join('\n'))}`;
}

/** `GET /health → 200 4.1 ms`: an `http_request` line's message. */
function httpRequestMessage(record: Record<string, unknown>): string {
  const duration = typeof record.duration_ms === 'number' ? ` ${record.duration_ms.toFixed(1)} ms` : '';
  const status = record.completed === false ? `${valueText(record.status)} (client left)` : valueText(record.status);
  return `${valueText(record.method)} ${valueText(record.path)} → ${status}${duration}`;
}

/** Continuation lines of a multi-line message, indented under the first. */
function indentLines(text: string): string {
  return text.includes('\n') ? text.split('\n').join('\n    ') : text;
}

/** One output line of a child process as `npm start` prints it (no trailing newline). */
export function formatLine(line: string, options: FormatOptions & { readable: boolean }): string {
  const record = options.readable ? parsePinoLine(line) : undefined;
  if (record) return formatRecord(record, options);
  return `${options.colour ? `${BOLD}[${options.process}]${RESET}` : `[${options.process}]`} ${line}`;
}

/** `npm start`'s own message, in the same shape as its processes' lines. */
export function startLine(message: string, options: { readable: boolean; colour: boolean; level?: 'info' | 'warn' | 'error' }): string {
  const level = LEVEL_VALUES[options.level ?? 'info'];
  if (!options.readable) return `[start] ${message}`;
  return formatRecord({ level, time: Date.now(), msg: message }, { process: 'start', colour: options.colour });
}
