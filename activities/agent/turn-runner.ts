/**
 * The host activity that executes one admitted turn: reads the attempt's context and grant from
 * the control-plane API (never through Temporal history), fences off anything a lost earlier
 * attempt left running in the member's sandbox, runs the chat's agent driver with events going to
 * the API, heartbeats, and stops promptly on cancellation or at the turn's time limit. For a chat
 * with a repository it captures the turn's diff and uploads it (turn-capture.ts).
 */
import { ApplicationFailure, CancelledFailure, Context } from '@temporalio/activity';
import type Docker from 'dockerode';
import type { Settings } from '../../lib/settings';
import { FailureType } from '../../workflows/definitions/failures';
import { DockerSandbox, killMemberProcesses } from '../docker/docker-sandbox';
import { memberPaths } from '../docker/sandbox-container';
import { ApiEventSink, AttemptFencedError } from './api-event-sink';
import { driverFor, usesModelRelay } from './drivers';
import { explainNoSpace } from './disk-full';
import { prepareForkSession } from './fork-session';
import { HostQuestionChannel } from './question-channel';
import { startTurnCapture } from './turn-capture';
import { ToolRelayRefusedError } from './tool-relay-client';
import { relayRetryEvent } from './relay-retry';
import { relayContainerPort, relayContainerSocket, relayHostDir, startModelRelay, type ModelRelay } from './model-relay';
import { AttemptNotCurrentError, HostApiError, type HostApiClient } from './host-api-client';
import type { AttemptContext } from '../../agent/jobs/attempt-context';
import type { ExecOptions, ExecResult, SandboxExec, WorkspaceLimits } from './types';
import { SandboxDiedError } from './types';

export interface TurnRunnerDeps {
  docker: Docker;
  hostId: string;
  api: HostApiClient;
  apiUrl: string;
  credential: string;
  gatewayUrl: string;
  settings: Pick<Settings, 'AGENT_CLI_COMMAND' | 'AGENT_RELAY_MAX_BODY_MIB'>;
  /** Root of the containers' model-relay directories on this host (`AGENT_RELAY_DIR`). */
  relayRoot: string;
}

export interface RunTurnInput {
  attemptId: string;
  jobId: string;
  turnSeq: number;
}

/** Adds the chat's environment to every command a driver runs. */
function withEnv(sandbox: SandboxExec, env: Record<string, string>): SandboxExec {
  return {
    exec: (command: string[], options: ExecOptions): Promise<ExecResult> => sandbox.exec(command, { ...options, env: { ...env, ...options.env } }),
    readFile: (path, maxBytes) => sandbox.readFile(path, maxBytes),
    writeFile: (path, content) => sandbox.writeFile(path, content),
  };
}

/**
 * The owner-facing failure of a turn whose context or grant could not be fetched: one plain
 * sentence (docs/agent-events.md "Turn errors"), typed for the workflow; the API's answer goes to
 * the host runner's log (`agent_turn_start_failed`).
 */
/** The driver's workspace limits from the attempt's context (none from an API that does not send them). */
function workspaceLimitsOf(context: AttemptContext): { workspaceLimits?: WorkspaceLimits } {
  const limits = context.workspace_limits;
  if (!limits) return {};
  return {
    workspaceLimits: {
      commandTimeoutMs: limits.command_timeout_seconds * 1000, commandOutputMaxBytes: limits.command_output_max_bytes, fileReadMaxBytes: limits.file_read_max_bytes,
    },
  };
}

function startFailure(err: unknown, what: 'context' | 'grant', input: RunTurnInput, model?: string): ApplicationFailure {
  if (err instanceof AttemptNotCurrentError) return ApplicationFailure.nonRetryable(err.message, FailureType.attemptNotCurrent);
  const api = err instanceof HostApiError ? err : undefined;
  Context.current().log.warn('turn could not start', {
    event: 'agent_turn_start_failed', fetching: what, job_id: input.jobId, attempt_id: input.attemptId,
    status: api?.status, code: api?.code, detail: (err as Error).message,
  });
  if (what === 'grant' && api?.status === 404 && api.code === 'model_not_found') {
    return ApplicationFailure.nonRetryable(`The model '${model ?? '?'}' is no longer available to this account`, FailureType.modelUnavailable);
  }
  if (what === 'grant' && api?.status === 503) {
    return ApplicationFailure.nonRetryable('The agent could not get access to the model: inference grants are not configured on this deployment', FailureType.grantsNotConfigured);
  }
  if (what === 'grant') return ApplicationFailure.nonRetryable('The agent could not get access to the model; try the turn again later', FailureType.grantUnavailable);
  return ApplicationFailure.nonRetryable('The turn could not start because the control plane did not answer; try it again later', FailureType.controlPlaneUnavailable);
}

/**
 * The attempt's tool-relay access (docs/mcp.md "Drivers"). A superseded attempt stops the turn; any
 * other failure (an API without the relay) runs the turn without MCP tools, logged as
 * `agent_tool_credentials_failed`.
 */
async function fetchToolRelay(deps: TurnRunnerDeps, input: RunTurnInput): Promise<{ apiUrl: string; token: string; residencyCredential: string } | undefined> {
  try {
    const issued = await deps.api.toolCredentials(input.attemptId);
    return { apiUrl: deps.apiUrl, token: issued.mcp_token, residencyCredential: issued.residency_credential };
  } catch (err) {
    if (err instanceof AttemptNotCurrentError) throw startFailure(err, 'context', input);
    const api = err instanceof HostApiError ? err : undefined;
    Context.current().log.warn('tool relay credentials unavailable', { event: 'agent_tool_credentials_failed', attempt_id: input.attemptId, status: api?.status, detail: (err as Error).message });
    return undefined;
  }
}

export async function runAgentTurn(deps: TurnRunnerDeps, input: RunTurnInput): Promise<{ result: string }> {
  const ctx = Context.current();
  let context;
  let grant;
  try {
    context = await deps.api.attemptContext(input.attemptId);
  } catch (err) {
    throw startFailure(err, 'context', input);
  }
  try {
    grant = await deps.api.turnGrant(input.attemptId);
  } catch (err) {
    throw startFailure(err, 'grant', input, context.model);
  }
  const toolRelay = await fetchToolRelay(deps, input);
  await killMemberProcesses(deps.docker, context.container_name, context.uid);
  const sandbox = withEnv(new DockerSandbox(deps.docker, context.container_name, context.uid), context.env);
  const events = new ApiEventSink({ apiUrl: deps.apiUrl, hostId: deps.hostId, credential: deps.credential, attemptId: input.attemptId });
  const abort = new AbortController();
  const deadline = Date.now() + context.turn_time_limit_seconds * 1000;
  const limitTimer = setTimeout(() => abort.abort(new Error('turn time limit reached')), context.turn_time_limit_seconds * 1000);
  const onCancel = () => abort.abort(new Error('turn cancelled'));
  ctx.cancellationSignal.addEventListener('abort', onCancel);
  const beat = setInterval(() => ctx.heartbeat(), 1000);
  let relay: ModelRelay | undefined;
  try {
    // A chat with a repository: the workspace as it is now (heartbeats already running) is the start of the turn's diff (docs/publisher.md).
    const capture = await startTurnCapture({ docker: deps.docker, api: deps.api, log: ctx.log }, context);
    // A fork's first turn: its own native session, made from the original's at the anchor (docs/sandboxes.md "Forks").
    if (context.fork) await prepareForkSession(deps.docker, context.container_name, context.uid, context.fork);
    const driver = driverFor(context.driver, deps.settings);
    if (usesModelRelay(context.driver)) {
      relay = await startModelRelay({
        hostDir: relayHostDir(deps.relayRoot, context.container_name), uid: context.uid, gatewayUrl: deps.gatewayUrl,
        grantToken: grant.token, maxBodyBytes: deps.settings.AGENT_RELAY_MAX_BODY_MIB * 1024 * 1024,
        // The CLIs' one retry policy (their own retries are off): each retry is the turn's `retry` event.
        retries: { deadline, onRetry: (retry) => void events.emit('retry', relayRetryEvent(retry)).catch(() => undefined) },
        ...(toolRelay ? { toolRelay: { apiUrl: toolRelay.apiUrl, credential: toolRelay.residencyCredential } } : {}),
      });
    }
    const outcome = await driver({
      ...(relay ? { relay: { socket: relayContainerSocket(context.uid), port: relayContainerPort(context.uid) } } : {}),
      ...(toolRelay ? { toolRelay: { apiUrl: toolRelay.apiUrl, token: toolRelay.token } } : {}),
      prompt: context.prompt, model: context.model, gatewayUrl: deps.gatewayUrl, grantToken: grant.token,
      jobId: context.job_id, turnSeq: context.turn_seq, sessionDir: memberPaths(context.uid).sessionDir,
      sandbox, events, signal: abort.signal, deadline, ...workspaceLimitsOf(context),
      questions: new HostQuestionChannel({ api: deps.api, attemptId: input.attemptId, events, deadline }),
    });
    await capture?.finish();
    return { result: outcome.result };
  } catch (err) {
    if (ctx.cancellationSignal.aborted) throw new CancelledFailure('turn cancelled');
    if (abort.signal.aborted) throw ApplicationFailure.nonRetryable(`The turn reached its time limit (${context.turn_time_limit_seconds} s)`, FailureType.turnTimeLimit);
    if (err instanceof AttemptNotCurrentError || err instanceof AttemptFencedError || err instanceof ToolRelayRefusedError) throw ApplicationFailure.nonRetryable('The attempt was superseded', FailureType.attemptNotCurrent);
    if (err instanceof SandboxDiedError) throw ApplicationFailure.nonRetryable(err.message, FailureType.sandboxDied);
    const failure = (err as Error).message || 'The agent failed';
    const gaveUp = relay?.gaveUp();
    const message = await explainNoSpace(deps.docker, context.container_name, gaveUp ? `${gaveUp}. ${failure}` : failure);
    throw ApplicationFailure.nonRetryable(message, FailureType.turnFailed);
  } finally {
    await relay?.close();
    clearTimeout(limitTimer);
    clearInterval(beat);
    ctx.cancellationSignal.removeEventListener('abort', onCancel);
    if (abort.signal.aborted) await killMemberProcesses(deps.docker, context.container_name, context.uid).catch(() => undefined);
  }
}
