/**
 * The built-in driver's tools, offered to the model as OpenAI function tools and executed in the
 * member's sandbox: `bash {command}`, `read_file {path}`, `write_file {path, content}`.
 * Bad calls (unknown tool, arguments that are not the expected JSON) are answered as tool errors
 * for the model to correct; only sandbox failures and aborts throw.
 */
import { SandboxFileError, type SandboxExec, type WorkspaceLimits } from './types';
import { boundedValue, truncateWithMarker } from './driver-text';
import { DriverAbortedError } from './retry-policy';

/** Longest a single bash call may run (further bounded by the turn deadline), without host settings. */
export const BASH_TIMEOUT_MS = 10 * 60_000;
/** Bytes of stdout and of stderr each kept from one bash call, without host settings. */
export const BASH_OUTPUT_BYTES = 64 * 1024;
/** Largest file `read_file` reads, without host settings. */
export const READ_FILE_MAX_BYTES = 256 * 1024;
/** The limits of a turn without host settings (an older control plane). */
export const DEFAULT_WORKSPACE_LIMITS: WorkspaceLimits = { commandTimeoutMs: BASH_TIMEOUT_MS, commandOutputMaxBytes: BASH_OUTPUT_BYTES, fileReadMaxBytes: READ_FILE_MAX_BYTES };
/** Characters of one tool result sent back to the model (and shown in the event). */
export const TOOL_RESULT_MAX_CHARS = 16 * 1024;
/** Characters of a call's arguments (as JSON) shown in its `tool_use` event. */
export const TOOL_INPUT_EVENT_CHARS = 64 * 1024;

export const BUILTIN_TOOLS = [
  functionTool('bash', 'Run a shell command (bash -lc) in the workspace (/workspace). Returns stdout, stderr and the exit code.', {
    command: { type: 'string', description: 'The command line to run.' },
  }),
  functionTool('read_file', 'Read a text file. Relative paths are under /workspace.', {
    path: { type: 'string', description: 'File path.' },
  }),
  functionTool('write_file', 'Create or replace a text file (parent directories are created). Relative paths are under /workspace.', {
    path: { type: 'string', description: 'File path.' },
    content: { type: 'string', description: 'The complete new content.' },
  }),
];

function functionTool(name: string, description: string, properties: Record<string, unknown>) {
  return {
    type: 'function' as const,
    function: { name, description, parameters: { type: 'object', properties, required: Object.keys(properties), additionalProperties: false } },
  };
}

export interface ToolContext {
  sandbox: SandboxExec;
  signal: AbortSignal;
  deadline: number;
  /** The turn's workspace limits (host settings); default {@link DEFAULT_WORKSPACE_LIMITS}. */
  limits?: WorkspaceLimits;
}

export interface ToolOutcome {
  /** Text sent back to the model (bounded). */
  output: string;
  isError: boolean;
  /** Extra fields for the `tool_result` event (exit code, truncation). */
  details: Record<string, unknown>;
}

/** Parses the model's arguments: an object with a string for each of `fields`, or an error text. */
function parseArguments<K extends string>(name: string, json: string, fields: K[]): Record<K, string> | string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(json === '' ? '{}' : json);
  } catch {
    return `Invalid arguments for ${name}: not valid JSON.`;
  }
  const expected = `{${fields.map((f) => `${f}: string`).join(', ')}}`;
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return `Invalid arguments for ${name}: expected ${expected}.`;
  const obj = parsed as Record<string, unknown>;
  const out = {} as Record<K, string>;
  for (const field of fields) {
    const value = obj[field];
    if (typeof value !== 'string') return `Invalid arguments for ${name}: expected ${expected}.`;
    out[field] = value;
  }
  return out;
}

/** The arguments as shown in the `tool_use` event: the parsed object, or the raw text when not JSON. */
export function toolInputForEvent(json: string): unknown {
  try {
    return boundedValue(JSON.parse(json === '' ? '{}' : json), TOOL_INPUT_EVENT_CHARS);
  } catch {
    return { raw: truncateWithMarker(json, 2048) };
  }
}

/** Runs one tool call. */
export async function runBuiltinTool(name: string, argumentsJson: string, ctx: ToolContext): Promise<ToolOutcome> {
  switch (name) {
    case 'bash': {
      const args = parseArguments(name, argumentsJson, ['command']);
      return typeof args === 'string' ? toolError(args) : runBash(args.command, ctx);
    }
    case 'read_file': {
      const args = parseArguments(name, argumentsJson, ['path']);
      return typeof args === 'string' ? toolError(args) : readFile(args.path, ctx);
    }
    case 'write_file': {
      const args = parseArguments(name, argumentsJson, ['path', 'content']);
      return typeof args === 'string' ? toolError(args) : writeFile(args.path, args.content, ctx);
    }
    default:
      return toolError(`Unknown tool "${name.slice(0, 100)}". Available tools: bash, read_file, write_file.`);
  }
}

function toolError(message: string, details: Record<string, unknown> = {}): ToolOutcome {
  return { output: message, isError: true, details };
}

async function runBash(command: string, ctx: ToolContext): Promise<ToolOutcome> {
  const limits = ctx.limits ?? DEFAULT_WORKSPACE_LIMITS;
  const timeoutMs = Math.min(limits.commandTimeoutMs, ctx.deadline - Date.now());
  if (timeoutMs <= 0) return toolError('Not run: the turn has no time left.');
  let result;
  try {
    result = await ctx.sandbox.exec(['bash', '-lc', command], { timeoutMs, maxOutputBytes: limits.commandOutputMaxBytes, signal: ctx.signal });
  } catch (err) {
    if (ctx.signal.aborted) throw new DriverAbortedError();
    throw err;
  }
  if (ctx.signal.aborted) throw new DriverAbortedError();
  const parts = [result.stdout.replace(/\n$/, '')];
  if (result.stderr) parts.push(`[stderr]\n${result.stderr.replace(/\n$/, '')}`);
  if (result.timedOut) parts.push(`[killed after ${Math.round(timeoutMs / 1000)} s]`);
  if (result.truncated) parts.push(`[output beyond ${limits.commandOutputMaxBytes} bytes per stream was dropped]`);
  parts.push(`[exit code ${result.exitCode}]`);
  const output = truncateWithMarker(parts.filter((p) => p !== '').join('\n'), TOOL_RESULT_MAX_CHARS);
  return { output, isError: result.exitCode !== 0, details: { exit_code: result.exitCode, timed_out: result.timedOut, truncated: result.truncated } };
}

async function readFile(path: string, ctx: ToolContext): Promise<ToolOutcome> {
  try {
    const content = await ctx.sandbox.readFile(path, (ctx.limits ?? DEFAULT_WORKSPACE_LIMITS).fileReadMaxBytes);
    return { output: truncateWithMarker(content, TOOL_RESULT_MAX_CHARS), isError: false, details: { bytes: Buffer.byteLength(content) } };
  } catch (err) {
    if (ctx.signal.aborted) throw new DriverAbortedError();
    if (err instanceof SandboxFileError) return toolError(`Cannot read ${path}: ${err.message}`);
    throw err;
  }
}

async function writeFile(path: string, content: string, ctx: ToolContext): Promise<ToolOutcome> {
  try {
    await ctx.sandbox.writeFile(path, content);
  } catch (err) {
    if (ctx.signal.aborted) throw new DriverAbortedError();
    if (err instanceof SandboxFileError) return toolError(`Cannot write ${path}: ${err.message}`);
    throw err;
  }
  return { output: `Wrote ${Buffer.byteLength(content)} bytes to ${path}.`, isError: false, details: { bytes: Buffer.byteLength(content) } };
}
