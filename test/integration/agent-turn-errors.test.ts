/**
 * What an owner reads when a turn cannot start (real PostgreSQL, Temporal, Docker, gateway and
 * API): one plain sentence in the turn's `error` and its `turn_failed` event, never the text of
 * another service's answer (`control-plane API answered 404 to POST …: {"error":…}`), while the
 * API's log keeps that detail for operators.
 */
import assert from 'node:assert/strict';
import { startAgentStack, ownerCall, AGENT_MODEL, type AgentStack } from '../support/agent-stack';
import { waitFor } from '../support/wait';

interface TurnView {
  state: string;
  error?: string | null;
}

describe('turn errors shown to owners (PostgreSQL + Temporal + Docker + gateway)', function () {
  this.timeout(180_000);
  let stack: AgentStack;

  before(async () => {
    stack = await startAgentStack();
  });
  after(async () => {
    await stack?.close();
  });

  /** Creates a job with the control worker stopped, lets `change` alter the world, then runs the turn to its end. */
  async function failedTurn(change: (jobId: string) => Promise<void> | void): Promise<{ error: string; eventError: unknown }> {
    await stack.stopControl();
    const res = await ownerCall(stack, 'POST', '/v1/agent/jobs', { prompt: 'say hi', model: AGENT_MODEL, repo: null });
    assert.equal(res.status, 201, await res.clone().text());
    const jobId = ((await res.json()) as { job_id: string }).job_id;
    await change(jobId);
    await stack.startControl();
    const turn = await waitFor(async () => {
      const view = (await (await ownerCall(stack, 'GET', `/v1/agent/jobs/${jobId}`)).json()) as { turns: TurnView[] };
      const first = view.turns[0];
      return first && first.state !== 'queued' && first.state !== 'running' ? first : undefined;
    }, 'the turn to end', 120_000);
    assert.equal(turn.state, 'failed');
    const event = await stack.t.db('agent_events').where({ job_id: jobId, event_type: 'turn_failed' }).first<{ payload: { error?: unknown } }>('payload');
    return { error: turn.error ?? '', eventError: event?.payload.error };
  }

  const assertPlain = (text: string) => {
    assert.doesNotMatch(text, /control-plane API|answered \d{3}|refused by the gateway|[{}"]/, `no nested service text in: ${text}`);
  };

  it('says the model is no longer available when the gateway refuses the grant for a model it does not know', async () => {
    const { error, eventError } = await failedTurn(async (jobId) => {
      // The registry no longer serves the job's model (removed after the job was accepted).
      await stack.t.db('agent_jobs').where({ job_id: jobId }).update({ model: 'retired-model' });
    });
    assert.equal(error, "The model 'retired-model' is no longer available to this account");
    assert.equal(eventError, error);
    assertPlain(error);
    const detail = stack.api.logs.lines.find((line) => line.event === 'agent_grant_dispatch_failed');
    assert.equal(detail?.status, 404);
    assert.match(String(detail?.detail), /retired-model/, 'the gateway’s answer is in the API’s log');
  });

  it('says grants are not configured when the API has no grant dispatch', async () => {
    const grants = stack.api.deps.grants;
    try {
      const { error, eventError } = await failedTurn(() => {
        delete stack.api.deps.grants;
      });
      assert.equal(error, 'The agent could not get access to the model: inference grants are not configured on this deployment');
      assert.equal(eventError, error);
      assertPlain(error);
    } finally {
      stack.api.deps.grants = grants;
    }
  });
});
