/**
 * The built-in agent driver: a tool-calling loop against the gateway's chat completions with the
 * turn's inference grant. Each model answer's text is a `message` event; each tool call is a
 * `tool_use` event, runs in the sandbox, and is a `tool_result` event whose output goes back to
 * the model. The chat's history (its native session) lives in the member's session directory, so
 * a later turn continues the conversation. See docs/agent-events.md. The chat's MCP tools (its bound
 * connections, docs/mcp.md) are offered beside the built-in ones and called through the tool relay
 * with the attempt's `mcp_…` token; the relay records their `tool_use`/`tool_result` events.
 */
import { posix } from 'node:path';
import { SandboxFileError, type AgentDriver, type DriverInput } from './types';
import { completeChat, type ChatMessage, type ToolCall } from './gateway-chat';
import { BUILTIN_TOOLS, TOOL_RESULT_MAX_CHARS, runBuiltinTool, toolInputForEvent } from './builtin-tools';
import { DriverAbortedError } from './retry-policy';
import { truncateWithMarker } from './driver-text';
import { callRelayTool, listRelayTools, relayArguments, type RelayTool } from './tool-relay-client';

/** Most model calls (answers received) in one turn; the turn fails beyond it. */
export const MAX_MODEL_CALLS_PER_TURN = 50;
/** Session file name inside the member's session directory. */
export const BUILTIN_SESSION_FILE = 'builtin-session.json';
/** Largest session file read back; a larger (or unreadable) file starts a fresh history. */
export const SESSION_MAX_BYTES = 16 * 1024 * 1024;
/** Characters of assistant text in one `message` event. */
const MESSAGE_EVENT_CHARS = 64 * 1024;

export const BUILTIN_SYSTEM_PROMPT = [
  'You are a coding agent working inside a sandbox container. The project workspace is /workspace.',
  'Use the tools to inspect and change files and to run commands; there is no network access.',
  'When the task is done, answer with a short summary of what you did.',
].join(' ');

/** Where one finished turn's messages end in the session (`messages.slice(0, end)`): a fork cuts the session there (fork-session.ts). */
export interface BuiltinTurnMark {
  job: string;
  seq: number;
  end: number;
}

export interface BuiltinSession {
  version: 1;
  messages: ChatMessage[];
  /** One mark per completed turn, oldest first; absent in sessions written before forks. */
  turns?: BuiltinTurnMark[];
}

export const builtinDriver: AgentDriver = async (input) => {
  const sessionPath = posix.join(input.sessionDir, BUILTIN_SESSION_FILE);
  const { messages: history, turns } = await loadSession(input, sessionPath);
  history.push({ role: 'user', content: input.prompt });
  const mcpTools = input.toolRelay ? await listRelayTools(input.toolRelay, input.signal) : [];
  const mcpNames = new Set(mcpTools.map((tool) => tool.name));
  const tools = [...BUILTIN_TOOLS, ...mcpTools.map(mcpFunctionTool)];
  for (let call = 1; call <= MAX_MODEL_CALLS_PER_TURN; call += 1) {
    checkNotAborted(input);
    const answer = await completeChat(input, { messages: [{ role: 'system', content: BUILTIN_SYSTEM_PROMPT }, ...history], tools });
    history.push(answer);
    if (answer.content) {
      await input.events.emit('message', { role: 'assistant', text: truncateWithMarker(answer.content, MESSAGE_EVENT_CHARS) });
    }
    if (!answer.tool_calls?.length) {
      turns.push({ job: input.jobId, seq: input.turnSeq, end: history.length });
      await saveHistory(input, sessionPath, history, turns);
      return { result: answer.content ?? '' };
    }
    for (const toolCall of answer.tool_calls) history.push(mcpNames.has(toolCall.function.name) ? await runRelayCall(input, toolCall) : await runToolCall(input, toolCall));
    await saveHistory(input, sessionPath, history, turns);
  }
  throw new Error(`The agent stopped after ${MAX_MODEL_CALLS_PER_TURN} model calls in this turn without a final answer.`);
};

async function runToolCall(input: DriverInput, toolCall: ToolCall): Promise<ChatMessage> {
  const name = toolCall.function.name;
  const base = { tool_use_id: toolCall.id, tool_name: name };
  await input.events.emit('tool_use', { ...base, input: toolInputForEvent(toolCall.function.arguments) });
  const outcome = await runBuiltinTool(name, toolCall.function.arguments, {
    sandbox: input.sandbox, signal: input.signal, deadline: input.deadline, ...(input.workspaceLimits ? { limits: input.workspaceLimits } : {}),
  });
  await input.events.emit('tool_result', { ...base, output: outcome.output, is_error: outcome.isError, ...outcome.details }, { isError: outcome.isError });
  return { role: 'tool', tool_call_id: toolCall.id, content: outcome.output };
}

/** An MCP tool as an OpenAI function tool (its input schema as the parameters). */
function mcpFunctionTool(tool: RelayTool) {
  return { type: 'function' as const, function: { name: tool.name, description: tool.description, parameters: { type: 'object', ...tool.input_schema } } };
}

/**
 * An MCP tool call through the relay (which records its events); the model gets the bounded output.
 * Arguments that are not a JSON object never reach the relay: the driver records that refusal itself.
 */
async function runRelayCall(input: DriverInput, toolCall: ToolCall): Promise<ChatMessage> {
  const relay = input.toolRelay!;
  const name = toolCall.function.name;
  const args = relayArguments(toolCall.function.arguments);
  if (!args) {
    const output = `Invalid arguments for ${name}: expected a JSON object.`;
    const base = { tool_use_id: toolCall.id, tool_name: name };
    await input.events.emit('tool_use', { ...base, input: toolInputForEvent(toolCall.function.arguments) });
    await input.events.emit('tool_result', { ...base, output, is_error: true }, { isError: true });
    return { role: 'tool', tool_call_id: toolCall.id, content: output };
  }
  const outcome = await callRelayTool(relay, { name, args, toolUseId: toolCall.id }, input.signal);
  return { role: 'tool', tool_call_id: toolCall.id, content: truncateWithMarker(outcome.output, TOOL_RESULT_MAX_CHARS) };
}

function checkNotAborted(input: DriverInput): void {
  if (input.signal.aborted) throw new DriverAbortedError();
}

/** A session file's content, or undefined when it is not one. */
export function parseBuiltinSession(text: string): { messages: ChatMessage[]; turns: BuiltinTurnMark[] } | undefined {
  try {
    const parsed = JSON.parse(text) as Partial<BuiltinSession>;
    if (parsed.version === 1 && Array.isArray(parsed.messages)) return { messages: parsed.messages, turns: Array.isArray(parsed.turns) ? parsed.turns : [] };
  } catch {
    // not a session
  }
  return undefined;
}

/** The chat's earlier messages and turn marks; a missing or unreadable session starts empty (with a notice when unreadable). */
async function loadSession(input: DriverInput, sessionPath: string): Promise<{ messages: ChatMessage[]; turns: BuiltinTurnMark[] }> {
  let text: string;
  try {
    text = await input.sandbox.readFile(sessionPath, SESSION_MAX_BYTES);
  } catch (err) {
    if (err instanceof SandboxFileError) return { messages: [], turns: [] };
    throw err;
  }
  const session = parseBuiltinSession(text);
  if (session) return session;
  await input.events.emit('notice', { kind: 'session_reset', message: 'The saved conversation could not be read; this turn starts a fresh one.' });
  return { messages: [], turns: [] };
}

async function saveHistory(input: DriverInput, sessionPath: string, messages: ChatMessage[], turns: BuiltinTurnMark[]): Promise<void> {
  const session: BuiltinSession = { version: 1, messages, turns };
  await input.sandbox.writeFile(sessionPath, JSON.stringify(session));
}
