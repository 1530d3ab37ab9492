/**
 * The CLI agent driver: runs a configured coding CLI inside the member's container with the prompt
 * on stdin and the turn's gateway coordinates in its environment, and normalizes its JSON-lines
 * stdout (docs/agent-events.md) into driver events as they stream. A run ending in a retryable
 * error is re-run (with `AGENT_CLI_RESUME=1`) after the native CLI retry wait (retry-policy.ts),
 * announced by a `retry` event; a non-zero exit without a result fails the turn with the tail of
 * stderr.
 */
import { type AgentDriver, type DriverInput, type ExecResult } from './types';
import { execCliLines, redactPayload } from './cli-exec';
import { normalizeCliLine, type CliLine, type ToolNames } from './cli-lines';
import { abortableSleep, DriverAbortedError, retryDecision } from './retry-policy';
import { redactSecret, tailWithMarker } from './driver-text';

/** Bytes of stdout/stderr the sandbox keeps of one run (stdout is consumed as it streams). */
export const CLI_OUTPUT_BYTES = 256 * 1024;
/** Characters of stderr quoted in a failure message. */
export const STDERR_TAIL_CHARS = 2000;

export interface CliDriverOptions {
  /** The CLI's argv inside the container, e.g. `['agent-cli', '--json']`. */
  command: string[];
}

/** What one run of the CLI produced. */
interface RunOutcome {
  result?: string;
  lastAssistantText?: string;
  error?: { retryable: boolean; retryAfter?: number; message: string };
  exec: ExecResult;
}

export function cliDriver(options: CliDriverOptions): AgentDriver {
  if (options.command.length === 0) throw new Error('The coding CLI command is empty.');
  return async (input) => {
    const sleep = input.sleep ?? abortableSleep;
    const random = input.random ?? Math.random;
    for (let attempt = 1; ; attempt += 1) {
      const run = await runOnce(options.command, input, attempt > 1);
      if (run.result !== undefined) return { result: run.result };
      if (!run.error?.retryable) return finishWithoutResult(input, run);
      const decision = retryDecision({ attempt, retryAfter: run.error.retryAfter, now: Date.now(), deadline: input.deadline, random });
      if (!decision.retry) {
        throw new Error(`The coding CLI kept failing (${safe(input, run.error.message)}); ${decision.reason}.`);
      }
      await input.events.emit('retry', {
        attempt, wait_ms: decision.waitMs, reason: safe(input, run.error.message),
        ...(run.error.retryAfter !== undefined ? { retry_after: run.error.retryAfter } : {}),
      });
      await sleep(decision.waitMs, input.signal);
      if (input.signal.aborted) throw new DriverAbortedError();
    }
  };
}

/** The environment the CLI sees (the grant is its only secret). */
export function cliEnvironment(input: DriverInput, resume: boolean): Record<string, string> {
  return {
    AGENT_GATEWAY_URL: input.gatewayUrl,
    AGENT_GRANT_TOKEN: input.grantToken,
    AGENT_MODEL: input.model,
    AGENT_SESSION_DIR: input.sessionDir,
    AGENT_JOB_ID: input.jobId,
    AGENT_TURN_SEQ: String(input.turnSeq),
    ...(resume ? { AGENT_CLI_RESUME: '1' } : {}),
  };
}

async function runOnce(command: string[], input: DriverInput, resume: boolean): Promise<RunOutcome> {
  const toolNames: ToolNames = new Map();
  const outcome: Omit<RunOutcome, 'exec'> = {};
  const exec = await execCliLines(input, command, {
    maxOutputBytes: CLI_OUTPUT_BYTES, env: cliEnvironment(input, resume), timeLimitMessage: 'The turn reached its time limit while the coding CLI was running.',
  }, (line) => apply(input, normalizeCliLine(line, toolNames), outcome));
  return { ...outcome, exec };
}

async function apply(input: DriverInput, line: CliLine, outcome: Omit<RunOutcome, 'exec'>): Promise<void> {
  switch (line.kind) {
    case 'skip':
      return;
    case 'result':
      outcome.result = line.text;
      return;
    case 'error':
      outcome.error = { retryable: line.retryable, message: line.message, ...(line.retryAfter !== undefined ? { retryAfter: line.retryAfter } : {}) };
      return;
    case 'event':
      if (line.type === 'message' && typeof line.payload.text === 'string') outcome.lastAssistantText = line.payload.text;
      await input.events.emit(line.type, redactPayload(input, line.payload), line.isError ? { isError: true } : undefined);
  }
}

/** A run that ended without `result` and without a retryable error. */
function finishWithoutResult(input: DriverInput, run: RunOutcome): { result: string } {
  if (run.error) throw new Error(`The coding CLI failed: ${safe(input, run.error.message)}`);
  if (run.exec.exitCode !== 0) {
    const tail = safe(input, tailWithMarker(run.exec.stderr.trim(), STDERR_TAIL_CHARS));
    throw new Error(`The coding CLI exited with code ${run.exec.exitCode} without a result.${tail ? ` stderr: ${tail}` : ''}`);
  }
  return { result: run.lastAssistantText ?? '' };
}

function safe(input: DriverInput, text: string): string {
  return redactSecret(text, input.grantToken);
}
