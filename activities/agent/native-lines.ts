/**
 * Native coding-CLI event streams, normalized (docs/agent-drivers.md "Events"): one JSON line of
 * `claude -p --output-format stream-json --verbose` becomes zero or more
 * driver lines of the existing kinds (`message`, `tool_use`, `tool_result`, `retry`, `notice`), with
 * the bounds of the generic CLI format (the same normalizer checks and truncates them). The run's
 * session id, final answer and failure are collected in {@link NativeRun}. Pure; never throws on
 * bad input. Codex's app-server notifications use the same helpers (codex-app-server.ts).
 */
import { NOTICE_EXCERPT_CHARS, normalizeCliLine, type CliLine, type SplitLine, type ToolNames } from './cli-lines';
import { isRecord, str } from './driver-text';

/**
 * The name under which the CLIs are given the tool relay's MCP endpoint (native-driver.ts). A call of
 * one of its tools is recorded once, by the relay itself (`via: "mcp_relay"`, fenced to the attempt,
 * with the output the server really gave); the CLI's own report of it is dropped (docs/mcp.md "Drivers").
 */
export const TOOL_RELAY_SERVER = 'tools';
/** Claude Code's prefix of the relay's tools (`mcp__<server>__<tool>`). */
const CLAUDE_RELAY_PREFIX = `mcp__${TOOL_RELAY_SERVER}__`;

/** What a native run told us besides its events. */
export interface NativeRun {
  toolNames: ToolNames;
  /** Ids of the CLI's calls of relay tools: their results are dropped too (the relay recorded them). */
  relayCalls: Set<string>;
  /** The CLI's session (thread) id, to resume the next turn. */
  sessionId?: string;
  /** Where the CLI's session stands after this turn (native-marks.ts): Claude Code's last assistant message uuid, Codex's turn id. */
  turnMark?: string;
  /** The last assistant text (Codex's final answer is its last agent message). */
  lastText?: string;
  /** The final answer, once the CLI reported the run complete. */
  result?: string;
  /** The CLI's own report of a failed run. */
  failure?: string;
  /** Whether any model output (text or tool use) was seen: a resume that produced none may be a broken session. */
  produced: boolean;
}

export function newNativeRun(): NativeRun {
  return { toolNames: new Map(), relayCalls: new Set(), produced: false };
}

type Json = Record<string, unknown>;

/** A line of the generic CLI format, through its normalizer (bounds, name bookkeeping). */
export function generic(obj: Json, run: NativeRun): CliLine {
  return normalizeCliLine({ line: JSON.stringify(obj) }, run.toolNames);
}

export function notice(kind: string, details: Json): CliLine {
  return { kind: 'event', type: 'notice', payload: { kind, ...details } };
}

export function retry(attempt: number, waitMs: number | undefined, reason: string): CliLine {
  return { kind: 'event', type: 'retry', payload: { attempt, ...(waitMs !== undefined ? { wait_ms: waitMs } : {}), reason: reason.slice(0, 2000), source: 'cli' } };
}

/** Parses one split line of a native stream; a line that is not a JSON object becomes a notice. */
function parse(split: SplitLine): { obj: Json } | { line: CliLine } {
  if ('oversized' in split) return { line: notice('oversized_line', { length: split.oversized }) };
  const line = split.line.trim();
  if (line === '') return { line: { kind: 'skip' } };
  try {
    const parsed: unknown = JSON.parse(line);
    if (isRecord(parsed) && typeof parsed.type === 'string') return { obj: parsed };
  } catch {
    // fall through
  }
  return { line: notice('malformed_line', { problem: 'not a JSON object with a "type"', excerpt: line.slice(0, NOTICE_EXCERPT_CHARS), length: line.length }) };
}

// ---- Claude Code (`claude -p --output-format stream-json --verbose`) ----

function toolResultText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((part) => (isRecord(part) && typeof part.text === 'string' ? part.text : '')).join('');
  return JSON.stringify(content ?? '');
}

/** One line of Claude Code's stream-json. */
export function claudeLine(split: SplitLine, run: NativeRun): CliLine[] {
  const parsed = parse(split);
  if ('line' in parsed) return [parsed.line];
  const { obj } = parsed;
  if (typeof obj.session_id === 'string') run.sessionId = obj.session_id;
  const content = isRecord(obj.message) && Array.isArray(obj.message.content) ? obj.message.content.filter(isRecord) : [];
  switch (obj.type) {
    case 'system':
      if (obj.subtype === 'api_retry') {
        const attempt = typeof obj.attempt === 'number' ? obj.attempt : 1;
        const wait = typeof obj.retry_delay_ms === 'number' ? Math.round(obj.retry_delay_ms) : undefined;
        const reason = str(obj.error) ?? (typeof obj.error_status === 'number' ? `status ${obj.error_status}` : 'the model API failed');
        return [retry(attempt, wait, reason)];
      }
      return [];
    case 'assistant': {
      // The main conversation's messages only: a sub-agent's are not entries of the session's chain.
      if (typeof obj.uuid === 'string' && (obj.parent_tool_use_id === null || obj.parent_tool_use_id === undefined)) run.turnMark = obj.uuid;
      const out: CliLine[] = [];
      for (const block of content) {
        if (block.type === 'text' && typeof block.text === 'string' && block.text !== '') {
          run.lastText = block.text;
          run.produced = true;
          out.push(generic({ type: 'assistant', text: block.text }, run));
        } else if (block.type === 'tool_use' && typeof block.id === 'string' && typeof block.name === 'string') {
          run.produced = true;
          if (block.name.startsWith(CLAUDE_RELAY_PREFIX)) run.relayCalls.add(block.id);
          else out.push(generic({ type: 'tool_use', id: block.id, name: block.name, input: block.input ?? {} }, run));
        }
      }
      return out;
    }
    case 'user':
      return content
        .filter((block) => block.type === 'tool_result' && typeof block.tool_use_id === 'string' && !run.relayCalls.has(block.tool_use_id))
        .map((block) => generic({ type: 'tool_result', tool_use_id: block.tool_use_id, output: toolResultText(block.content), is_error: block.is_error === true }, run));
    case 'result':
      if (obj.is_error === true || (obj.subtype !== undefined && obj.subtype !== 'success')) {
        const errors = Array.isArray(obj.errors) ? obj.errors.filter((e) => typeof e === 'string').join('; ') : '';
        run.failure = (str(obj.result) || errors || (str(obj.subtype) ?? 'error')).slice(0, 2000);
      } else {
        run.result = str(obj.result) ?? run.lastText ?? '';
      }
      return [];
    default:
      return [];
  }
}
