/**
 * Seams between the host runner's pieces: the sandbox a driver works in (`SandboxExec`), where a
 * driver's normalized events go (`EventSink`) and the driver contract itself (`AgentDriver`).
 * The host activity wires a retained Docker container and the control-plane API behind these;
 * tests may wire the same real container with a recording sink.
 */

import type { AgentEventType } from '../../agent/events/event-types';

export { AGENT_EVENT_TYPES, type AgentEventType } from '../../agent/events/event-types';

export interface ExecOptions {
  /** Kill the command after this long; the result then has `timedOut: true` and exit code 124. */
  timeoutMs: number;
  /** Largest number of bytes kept of stdout and of stderr each; the rest is dropped (`truncated`). */
  maxOutputBytes: number;
  /** Aborting kills the command. */
  signal?: AbortSignal;
  /** Extra environment of this command only. */
  env?: Record<string, string>;
  /** Working directory inside the container. Default `/workspace`. */
  cwd?: string;
  /** Text written to the command's stdin, then closed (with {@link openStdin}: kept open). */
  stdin?: string;
  /**
   * Keeps stdin open for a conversation with the command (native questions): called once the
   * command runs (after {@link stdin} is written) with a writer; stdin closes when `end` is called
   * or the command ends.
   */
  openStdin?: (writer: StdinWriter) => void;
  /** Called for every chunk of stdout as it arrives (for streaming drivers). */
  onStdout?: (chunk: string) => void;
}

export interface StdinWriter {
  write(text: string): void;
  end(): void;
}

export interface ExecResult {
  exitCode: number;
  stdout: string;
  stderr: string;
  truncated: boolean;
  timedOut: boolean;
}

/** A member's view of its retained container: commands run as the member's fixed UID. */
export interface SandboxExec {
  exec(command: string[], options: ExecOptions): Promise<ExecResult>;
  /** Reads a file (relative paths are under `/workspace`); throws `SandboxFileError` when missing or too large. */
  readFile(path: string, maxBytes: number): Promise<string>;
  /** Writes a file (creating parent directories) owned by the member. */
  writeFile(path: string, content: string): Promise<void>;
}

/**
 * The sandbox container stopped while a command ran: under gVisor a sandbox past its memory cap is
 * ended whole by the host's OOM killer (runc kills only the allocating process, which is a command
 * failure). The turn fails with this message; the next turn starts the same container again.
 */
export class SandboxDiedError extends Error {
  constructor(containerName: string, detail: { oomKilled: boolean; exitCode: number | null; memoryBytes: number | null }) {
    const cap = detail.memoryBytes ? ` (its memory cap is ${Math.round(detail.memoryBytes / 1024 / 1024)} MiB)` : '';
    const why = detail.oomKilled ? 'it ran out of memory' : 'it reached one of its limits (memory, processes) or its runtime failed';
    super(`The sandbox ${containerName} stopped during the turn: ${why}${cap}, exit ${detail.exitCode ?? 'unknown'}. Its workspace is kept; the next turn starts it again.`);
    this.name = 'SandboxDiedError';
  }
}

export class SandboxFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SandboxFileError';
  }
}

/** Where a driver's events go, in order. `emit` resolves once the event is durably stored. */
export interface EventSink {
  emit(type: AgentEventType, payload: Record<string, unknown>, options?: { isError?: boolean }): Promise<void>;
}

/** Limits of the workspace tools of one turn (host settings; docs/agent-admin.md "Host settings"). */
export interface WorkspaceLimits {
  /** Longest one command may run (further bounded by the turn's deadline). */
  commandTimeoutMs: number;
  /** Bytes of stdout and of stderr each kept from one command. */
  commandOutputMaxBytes: number;
  /** Largest file a read returns. */
  fileReadMaxBytes: number;
}

export interface DriverInput {
  /** The owner's prompt of this turn. */
  prompt: string;
  /** Public model id the grant names. */
  model: string;
  /** Gateway base URL, e.g. `http://127.0.0.1:8080`. */
  gatewayUrl: string;
  /** The turn's inference grant (`agr_…`), sent as `Authorization: Bearer`. */
  grantToken: string;
  /** Identifies the chat; drivers keep their native session (history) per chat inside the sandbox. */
  jobId: string;
  turnSeq: number;
  /** Absolute directory inside the container, private to the member, kept between turns (native session files). */
  sessionDir: string;
  sandbox: SandboxExec;
  events: EventSink;
  /** Aborted when the turn is cancelled or its time limit passes. */
  signal: AbortSignal;
  /** Deadline of the whole turn (epoch ms). */
  deadline: number;
  /** The model relay of this turn (native drivers): the member's socket and loopback port inside the container. */
  relay?: { socket: string; port: number };
  /** The tool relay with the attempt's `mcp_…` token (the built-in driver offers the chat's MCP tools); absent: no MCP tools. */
  toolRelay?: { apiUrl: string; token: string };
  /** The turn's workspace limits; absent: the driver's built-in ones. */
  workspaceLimits?: WorkspaceLimits;
  /** Where a native CLI's questions go; absent: every question is answered `unanswered` at once. */
  questions?: QuestionChannel;
  /** Injected for tests: sleeping and jitter. */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  random?: () => number;
}

/**
 * A question a native CLI asks its user (Claude Code's `AskUserQuestion`, Codex's
 * `request_user_input`), normalized (docs/agent-drivers.md "Native questions"). `id` names the
 * question in the answer (Codex's own id; Claude Code's question text).
 */
export interface NativeQuestion {
  id: string;
  header: string;
  question: string;
  multi_select: boolean;
  options: Array<{ label: string; description: string }>;
}

export interface QuestionRequest {
  /** The CLI's own id of the request (unique within the attempt). */
  requestId: string;
  cli: 'codex' | 'claude-code';
  questions: NativeQuestion[];
}

/** What reaches the CLI: the owner's answers by question id, a decline, or no answer in time. */
export type QuestionReply =
  | { kind: 'answered'; answers: Record<string, string[]> }
  | { kind: 'declined'; message: string }
  | { kind: 'unanswered'; message: string };

/** The reply to a question when no owner can be asked (a run without a {@link QuestionChannel}). */
export const NO_CHANNEL_REPLY: QuestionReply = { kind: 'unanswered', message: 'Questions cannot be answered in this run; continue with your best judgment.' };

/** How a driver asks the chat's owner (the host runner: a `question` event, then the owner's answer through the API). */
export interface QuestionChannel {
  /** Shows the question and waits for the reply; `unanswered` when the wait ends first (its limit, the turn's end). */
  ask(request: QuestionRequest, signal: AbortSignal): Promise<QuestionReply>;
}

export interface DriverResult {
  /** The agent's final answer (shown as the turn's result). */
  result: string;
}

export type AgentDriver = (input: DriverInput) => Promise<DriverResult>;
