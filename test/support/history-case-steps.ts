/**
 * Steps shared by the recorded-history cases (history-cases.ts, idle-stop-history-case.ts;
 * docs/workflow-replay.md): what a case returns, the check that it ran as named, reading the
 * activities a history scheduled, and driving a chat through the owner routes.
 */
import type { History } from './workflow-histories';
import { chatWorkflowId } from '../../workflows/definitions/chat';
import { AGENT_MODEL, ownerCall, type AgentStack } from './agent-stack';

export interface RecordedRun {
  /** File name without `.json`: `<workflow>-<case>`. */
  name: string;
  history: History;
}

export function check(condition: boolean, what: string): void {
  if (!condition) throw new Error(`recording went off its case: ${what}`);
}

/** Activity types the history scheduled, in order. */
export function activities(history: History): string[] {
  return (history.events ?? []).flatMap((e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? []);
}
export const count = (items: string[], item: string) => items.filter((i) => i === item).length;
export const lastEventHas = (history: History, attribute: 'workflowExecutionCompletedEventAttributes' | 'workflowExecutionContinuedAsNewEventAttributes' | 'workflowExecutionFailedEventAttributes') =>
  Boolean(history.events?.at(-1)?.[attribute]);

/** A chat with an owner-given title (its title workflow skips without calling the model). */
export async function createChat(stack: AgentStack, prompt: string, title: string | undefined): Promise<string> {
  const res = await ownerCall(stack, 'POST', '/v1/agent/jobs', { prompt, model: AGENT_MODEL, repo: null, ...(title ? { title } : {}) });
  if (res.status !== 201) throw new Error(`job creation answered ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { job_id: string }).job_id;
}

export async function addTurn(stack: AgentStack, jobId: string, prompt: string): Promise<void> {
  const res = await ownerCall(stack, 'POST', `/v1/agent/jobs/${jobId}/turns`, { prompt });
  if (res.status !== 201) throw new Error(`adding a turn answered ${res.status}: ${await res.text()}`);
}

export async function cancelTurn(stack: AgentStack, jobId: string, seq: number): Promise<void> {
  const res = await ownerCall(stack, 'POST', `/v1/agent/jobs/${jobId}/turns/${seq}/cancel`);
  if (res.status !== 200) throw new Error(`cancelling turn ${seq} answered ${res.status}: ${await res.text()}`);
}

export async function turnStates(stack: AgentStack, jobId: string): Promise<string[]> {
  const rows = await stack.t.db('agent_turns').where({ job_id: jobId }).orderBy('seq').select<Array<{ state: string }>>('state');
  return rows.map((r) => r.state);
}

/** Waits for the chat workflow to end (idle after its last turn, following continue-as-new); returns the last run's history. */
export async function finishedChat(stack: AgentStack, jobId: string): Promise<History> {
  const handle = stack.env.client.workflow.getHandle(chatWorkflowId(jobId));
  await handle.result();
  return handle.fetchHistory();
}
