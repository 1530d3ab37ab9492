/**
 * The tool relay (docs/mcp.md "The relay"): the only way an agent reaches its chat's MCP
 * tools. Every request presents a relay credential, resolved again on each call to the chat's
 * current leased attempt (relay-credentials.ts). A call is recorded as a `tool_use` event, waits for
 * the owner's approval when its connection needs one, runs within its deadline through the chat's own
 * session (mcp-sessions.ts), and is recorded as a `tool_result` event; both events are appended
 * fenced to the attempt (it must still be running), and after every wait (approval, an OAuth token
 * refresh, the upstream call) the credential is re-checked against the same attempt and residency generation before
 * anything is answered. An unknown tool is 404; a tool of a connector-bound connection is a
 * `tool_result` error.
 */
import { randomUUID } from 'node:crypto';
import type { Db } from '../../lib/db';
import { AppError } from '../../lib/errors';
import { cleanText } from '../../lib/text';
import { appendEvents } from '../events/event-store';
import type { AgentEventType } from '../events/event-types';
import { asAuthorizationError, resolveTarget } from './discovery';
import type { McpSessionPool } from './mcp-sessions';
import { chatCatalog, findCatalogTool, type CatalogTool } from './relay-catalog';
import { recheckRelayCredential, type RelayPrincipal } from './relay-credentials';
import { failureOutput, inputForEvent, resultOutput } from './relay-results';

export interface RelayDeps {
  db: Db;
  pool: McpSessionPool;
  sealingKey: string | undefined;
  staleSeconds: number;
  callTimeoutSeconds: number;
  approvalWaitSeconds: number;
  /** Polling interval of the approval wait (tests shorten it). */
  approvalPollMs?: number;
}

export interface RelayCallInput {
  /** The model-facing tool name (`<connection>__<tool>`). */
  tool: string;
  arguments: Record<string, unknown>;
  /** The agent's own id of the call (the model's tool call id); generated when absent. */
  toolUseId?: string;
}

export interface RelayCallOutput {
  tool_use_id: string;
  tool_name: string;
  output: string;
  is_error: boolean;
}

/** The tools the chat of `principal` may call now. */
export async function relayTools(db: Db, principal: RelayPrincipal): Promise<Record<string, unknown>> {
  const catalog = await chatCatalog(db, principal.jobId);
  return {
    tools: catalog.tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.input_schema, connection: t.connection.name })),
    unavailable: catalog.unavailable,
  };
}

/** Appends one relay event, fenced: the attempt must still be running (else 401, nothing written). */
async function appendFenced(db: Db, principal: RelayPrincipal, callId: string, type: AgentEventType, payload: Record<string, unknown>, isError = false): Promise<void> {
  await db.transaction(async (trx) => {
    const attempt: unknown = await trx('agent_attempts').where({ attempt_id: principal.attemptId, state: 'running' }).forShare().first('attempt_id');
    if (attempt === undefined) throw new AppError('unauthorized', 'The tool relay credential authorizes nothing now (its attempt ended)');
    await appendEvents(trx, principal.jobId, [{
      turnSeq: principal.turnSeq, attemptId: principal.attemptId, seq: 0, eventType: type, payload, isError, dedupeKey: `mcp:${principal.attemptId}:${callId}:${type}`,
    }]);
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits for the owner's decision on a tool that needs approval; `approved`, `denied` or `unanswered`. */
async function awaitApproval(deps: RelayDeps, principal: RelayPrincipal, tool: CatalogTool, deadline: number): Promise<'approved' | 'denied' | 'unanswered'> {
  const key = { job_id: principal.jobId, connection_id: tool.connection.connection_id, tool_name: tool.tool };
  await deps.db('agent_mcp_approvals').insert({ ...key, generation: principal.generation, state: 'pending' }).onConflict(['job_id', 'connection_id', 'tool_name']).ignore();
  const until = Math.min(deadline, Date.now() + deps.approvalWaitSeconds * 1000);
  for (;;) {
    const row = await deps.db('agent_mcp_approvals').where(key).first<{ state: string } | undefined>('state');
    if (row?.state === 'approved' || row?.state === 'denied') return row.state;
    if (Date.now() >= until) return 'unanswered';
    await sleep(deps.approvalPollMs ?? 500);
  }
}

async function runCall(deps: RelayDeps, token: string, principal: RelayPrincipal, tool: CatalogTool, input: RelayCallInput, deadline: number): Promise<{ output: string; isError: boolean }> {
  if (tool.connection.approval_policy === 'required') {
    const decision = await awaitApproval(deps, principal, tool, deadline);
    if (decision === 'denied') return { output: `The owner denied the tool ${tool.name} for this chat.`, isError: true };
    if (decision === 'unanswered') return { output: `The tool ${tool.name} needs the owner's approval, which did not come in time.`, isError: true };
  }
  try {
    const left = () => Math.max(1, deadline - Date.now());
    const { target, waited } = await resolveTarget(deps.db, tool.connection, principal.jobId, { sealingKey: deps.sealingKey, fetchFn: deps.pool.oauthFetch(left()) });
    // After waiting for OAuth (a token refresh), the attempt and residency generation are re-checked before the server is called.
    if (waited) await recheckRelayCredential(deps.db, token, principal, deps.staleSeconds);
    const result = await deps.pool.callTool(target, tool.tool, input.arguments, { timeoutMs: left() });
    return resultOutput(result);
  } catch (caught) {
    const err = asAuthorizationError(tool.connection, caught);
    if (err instanceof AppError && err.code === 'unauthorized') throw err;
    if (err instanceof AppError) return { output: err.message, isError: true };
    return { output: failureOutput(err, deps.callTimeoutSeconds), isError: true };
  }
}

/**
 * One relay tool call for `principal` (already resolved from `token`): 404 for a tool the chat does
 * not have; otherwise the events and the tool's outcome. 401 when, after a wait, the credential no
 * longer resolves to the same attempt and residency generation.
 */
export async function relayCall(deps: RelayDeps, token: string, principal: RelayPrincipal, input: RelayCallInput): Promise<RelayCallOutput> {
  const found = await findCatalogTool(deps.db, principal.jobId, input.tool);
  if (!found.tool && !found.refusal) throw new AppError('not_found', `This chat has no tool '${cleanText(input.tool.slice(0, 100))}'`, { param: 'tool' });
  const callId = randomUUID();
  const base = { tool_use_id: input.toolUseId ?? `mcp_${callId}`, tool_name: input.tool };
  await appendFenced(deps.db, principal, callId, 'tool_use', { ...base, input: inputForEvent(input.arguments), via: 'mcp_relay' });
  const deadline = Date.now() + deps.callTimeoutSeconds * 1000;
  const outcome = found.tool ? await runCall(deps, token, principal, found.tool, input, deadline) : { output: found.refusal ?? '', isError: true };
  const current = await recheckRelayCredential(deps.db, token, principal, deps.staleSeconds);
  await appendFenced(deps.db, current, callId, 'tool_result', { ...base, output: outcome.output, is_error: outcome.isError }, outcome.isError);
  return { ...base, output: outcome.output, is_error: outcome.isError };
}
