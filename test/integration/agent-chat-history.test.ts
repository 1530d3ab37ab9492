/**
 * The chat workflow's life in Temporal: history is bounded by continue-as-new (every
 * `AGENT_CHAT_TURNS_PER_RUN` turns) without losing or reordering a turn, an idle chat's workflow
 * ends and the next turn starts a new run, and operators find chats by owner, host and state.
 */
import assert from 'node:assert/strict';
import { startAgentStack, ownerCall, AGENT_MODEL, type AgentStack } from '../support/agent-stack';
import { waitFor } from '../support/wait';
import { chatWorkflowId } from '../../workflows/definitions/chat';
import { searchAttributes } from '../../workflows/definitions/search-attributes';

describe('chat workflow history, idle end and search attributes (Temporal)', function () {
  this.timeout(180_000);
  let stack: AgentStack;

  before(async () => {
    stack = await startAgentStack({ env: { AGENT_CHAT_TURNS_PER_RUN: '2', AGENT_CHAT_IDLE_SECONDS: '3' } });
    stack.upstream.setDefault({ kind: 'json', content: 'ok' });
  });
  after(async () => {
    await stack?.close();
  });

  const turnStates = async (jobId: string) => (await stack.t.db('agent_turns').where({ job_id: jobId }).orderBy('seq')
    .select<Array<{ seq: number; state: string; started_at: Date | null; finished_at: Date | null }>>('seq', 'state', 'started_at', 'finished_at'));

  async function runs(jobId: string): Promise<Array<{ runId: string; status: string }>> {
    const found: Array<{ runId: string; status: string }> = [];
    for await (const execution of stack.env.client.workflow.list({ query: `WorkflowId = "${chatWorkflowId(jobId)}"` })) {
      found.push({ runId: execution.runId, status: execution.status.name });
    }
    return found;
  }

  it('continues as new every 2 turns, ends when idle, and starts again for the next turn', async () => {
    const created = await ownerCall(stack, 'POST', '/v1/agent/jobs', { prompt: 'turn 1', model: AGENT_MODEL, repo: null });
    assert.equal(created.status, 201);
    const jobId = ((await created.json()) as { job_id: string }).job_id;
    for (let seq = 2; seq <= 5; seq += 1) {
      assert.equal((await ownerCall(stack, 'POST', `/v1/agent/jobs/${jobId}/turns`, { prompt: `turn ${seq}` })).status, 201);
    }
    const done = await waitFor(async () => {
      const rows = await turnStates(jobId);
      return rows.length === 5 && rows.every((r) => r.state === 'completed') ? rows : undefined;
    }, '5 completed turns', 120_000);
    for (let i = 1; i < done.length; i += 1) assert.ok(done[i - 1]!.finished_at! <= done[i]!.started_at!, 'strict order across runs');

    const afterIdle = await waitFor(async () => {
      const list = await runs(jobId);
      return list.length >= 3 && list.every((r) => r.status !== 'RUNNING') ? list : undefined;
    }, 'the runs continued as new and the last one ended when idle', 60_000).catch(async (err: unknown) => {
      throw new Error(`${(err as Error).message}; runs: ${JSON.stringify(await runs(jobId))}`);
    });
    assert.ok(afterIdle.filter((r) => r.status === 'CONTINUED_AS_NEW').length >= 2, JSON.stringify(afterIdle));
    assert.ok(afterIdle.some((r) => r.status === 'COMPLETED'), 'the idle run completed');

    assert.equal((await ownerCall(stack, 'POST', `/v1/agent/jobs/${jobId}/turns`, { prompt: 'turn 6' })).status, 201);
    await waitFor(async () => (await turnStates(jobId)).at(-1)?.state === 'completed', 'turn 6 completed in a new run', 60_000);
    const description = await stack.env.client.workflow.getHandle(chatWorkflowId(jobId)).describe();
    const owner = await stack.t.db('agent_jobs').where({ job_id: jobId }).first<{ owner_id: string; host_id: string }>('owner_id', 'host_id');
    assert.equal(description.typedSearchAttributes.get(searchAttributes.owner), String(owner.owner_id));
    assert.equal(description.typedSearchAttributes.get(searchAttributes.host), owner.host_id);
    assert.ok(['idle', 'running'].includes(description.typedSearchAttributes.get(searchAttributes.state) ?? ''));
    assert.equal((description.memo)?.jobId, jobId);
  });
});
