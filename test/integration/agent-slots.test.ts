/**
 * Host slots under load over the real stack: 20 chats submitted at once on a 3-slot host never
 * have more than 3 turns running; lowering the slots takes effect at once (running turns finish,
 * nothing new is admitted above the new number); raising takes effect once the runner confirms
 * it by heartbeat.
 */
import assert from 'node:assert/strict';
import { startAgentStack, ownerCall, AGENT_MODEL, type AgentStack } from '../support/agent-stack';
import { ADMIN_TOKEN } from '../support/admin';
import { waitFor } from '../support/wait';

/** Samples the host's running attempts every few ms until stopped; keeps the maximum seen after `mark()`. */
function runningMonitor(stack: AgentStack) {
  let stopped = false;
  let max = 0;
  let maxSinceMark = 0;
  let current = 0;
  const loop = (async () => {
    while (!stopped) {
      const row = await stack.t.db('agent_attempts').where({ host_id: stack.hostId, state: 'running' }).count<{ count: string }[]>('* as count').first();
      current = Number(row?.count ?? 0);
      max = Math.max(max, current);
      maxSinceMark = Math.max(maxSinceMark, current);
      await new Promise((r) => setTimeout(r, 10));
    }
  })();
  return {
    get max() { return max; },
    get maxSinceMark() { return maxSinceMark; },
    get current() { return current; },
    mark() { maxSinceMark = current; },
    async stop() { stopped = true; await loop; },
  };
}

async function submitChats(stack: AgentStack, count: number, label: string): Promise<string[]> {
  return Promise.all(Array.from({ length: count }, async (_, i) => {
    const res = await ownerCall(stack, 'POST', '/v1/agent/jobs', { prompt: `${label} ${i}`, model: AGENT_MODEL, repo: null });
    assert.equal(res.status, 201, await res.clone().text());
    return ((await res.json()) as { job_id: string }).job_id;
  }));
}

async function allCompleted(stack: AgentStack, jobIds: string[]): Promise<void> {
  await waitFor(async () => {
    const rows = await stack.t.db('agent_turns').whereIn('job_id', jobIds).select<Array<{ state: string }>>('state');
    return rows.length === jobIds.length && rows.every((r) => r.state === 'completed');
  }, `${jobIds.length} chats completed`, 150_000);
}

async function putSlots(stack: AgentStack, slots: number | null): Promise<{ slots: { effective: number; display: string | null } }> {
  const res = await fetch(`${stack.api.url}/admin/agent/runner-hosts/${stack.hostId}/slots`, {
    method: 'PUT', headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify({ slots }),
  });
  assert.equal(res.status, 200, await res.clone().text());
  return (await res.json()) as { slots: { effective: number; display: string | null } };
}

describe('agent host slots under load (PostgreSQL + Temporal + Docker)', function () {
  this.timeout(240_000);
  let stack: AgentStack;

  before(async () => {
    stack = await startAgentStack({ slots: 3 });
    // Each turn is one model call that answers after a short pause, so turns overlap.
    stack.upstream.setDefault({ kind: 'slow_first_byte', delayMs: 400, then: { kind: 'json', content: 'ok' } });
  });
  after(async () => {
    await stack?.close();
  });

  it('never runs more than 3 turns at once when 20 chats arrive together on a 3-slot host', async () => {
    const monitor = runningMonitor(stack);
    const jobs = await submitChats(stack, 20, 'chat');
    await allCompleted(stack, jobs);
    await monitor.stop();
    assert.equal(monitor.max, 3, 'the host ran exactly up to its 3 slots');
    const sandboxes = await stack.t.db('agent_sandboxes').where({ host_id: stack.hostId }).count<{ count: string }[]>('* as count').first();
    assert.equal(Number(sandboxes?.count), 20, 'each chat got its own retained sandbox');
  });

  it('applies a lowered slot count at once and a raised one after the runner confirms it', async () => {
    stack.upstream.setDefault({ kind: 'slow_first_byte', delayMs: 1500, then: { kind: 'json', content: 'ok' } });
    const monitor = runningMonitor(stack);
    const first = await submitChats(stack, 6, 'lowering');
    await waitFor(() => monitor.current === 3, '3 turns running');
    const lowered = await putSlots(stack, 2);
    assert.equal(lowered.slots.effective, 2, 'admission uses the lower number at once');
    await waitFor(() => monitor.current <= 2, 'running turns drained to 2', 60_000);
    monitor.mark();
    await allCompleted(stack, first);
    assert.ok(monitor.maxSinceMark <= 2, `never more than 2 running after lowering (saw ${monitor.maxSinceMark})`);

    const raised = await putSlots(stack, 4);
    assert.equal(raised.slots.display, 'applying 4');
    await waitFor(async () => {
      const host = await stack.t.db('agent_hosts').where({ host_id: stack.hostId }).first<{ slots_total: number }>('slots_total');
      return host.slots_total === 4;
    }, 'the runner confirmed 4 slots by heartbeat');
    monitor.mark();
    const second = await submitChats(stack, 8, 'raising');
    await allCompleted(stack, second);
    await monitor.stop();
    assert.equal(monitor.maxSinceMark, 4, 'the raised slots were used');
    await putSlots(stack, null);
  });
});
