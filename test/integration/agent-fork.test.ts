/**
 * One fork end to end over the real stack (PostgreSQL, Temporal chat workflows, the host runner,
 * the built-in driver in Docker, a fake LLM upstream; docs/sandboxes.md "Forks"): the original
 * chat writes a file and commits it in a turn, the owner forks at that turn with a prompt, and the
 * fork's turn runs in the same container as another UID, sees and extends the file and the commit,
 * and streams its answer under its own job; the original then takes another turn.
 */
import assert from 'node:assert/strict';
import { startAgentStack, ownerCall, docker, AGENT_MODEL, type AgentStack } from '../support/agent-stack';
import { waitFor } from '../support/wait';

interface JobView {
  job_id: string;
  turns: Array<{ seq: number; state: string; result: string | null; error?: string }>;
}

async function job(stack: AgentStack, jobId: string): Promise<JobView> {
  const res = await ownerCall(stack, 'GET', `/v1/agent/jobs/${jobId}`);
  assert.equal(res.status, 200);
  return (await res.json()) as JobView;
}

async function settled(stack: AgentStack, jobId: string, turns: number): Promise<JobView> {
  return waitFor(async () => {
    const view = await job(stack, jobId);
    return view.turns.length === turns && view.turns.every((t) => ['completed', 'failed', 'cancelled'].includes(t.state)) ? view : undefined;
  }, `${turns} settled turns of ${jobId}`, 90_000);
}

/** What the sandbox printed for a `bash` tool call, as the driver sent it back to the model. */
function toolOutputs(stack: AgentStack): string[] {
  return stack.upstream.requests
    .flatMap((r) => ((r.body as { messages?: Array<{ role: string; content: unknown }> }).messages ?? []))
    .filter((m) => m.role === 'tool').map((m) => String(m.content));
}

/** The job's events to their end (the job is inactive, so the server closes the stream). */
async function eventsOf(stack: AgentStack, jobId: string): Promise<Array<{ event_type: string; job_id?: string; text: string }>> {
  const res = await fetch(`${stack.api.url}/v1/agent/jobs/${jobId}/events`, { headers: { authorization: `Bearer ${stack.ownerKey}` } });
  assert.equal(res.status, 200);
  const frames = (await res.text()).split('\n\n');
  return frames.flatMap((frame) => {
    const data = /^data: (.+)$/m.exec(frame)?.[1];
    if (!data) return [];
    const parsed = JSON.parse(data) as { event_type: string; job_id?: string };
    return [{ event_type: parsed.event_type, job_id: parsed.job_id, text: data }];
  });
}

const WHO = 'echo "uid=$(id -u) host=$(hostname)"';
const GIT = 'git -c user.email=a@example.invalid -c user.name=Agent';

describe('a chat fork end to end (PostgreSQL + Temporal + Docker + gateway)', function () {
  this.timeout(300_000);
  let stack: AgentStack;

  before(async () => {
    stack = await startAgentStack();
  });
  after(async () => {
    await stack?.close();
  });

  it('runs the fork in the original\'s container as another member, on the original\'s files and commits, and the original goes on', async () => {
    const { upstream } = stack;
    upstream.enqueue(
      { kind: 'tool_call', name: 'bash', arguments: { command: `printf 'from the original\\n' > plan.txt && ${GIT} add plan.txt && ${GIT} commit -q -m plan && ${WHO}` } },
      { kind: 'json', content: 'Wrote plan.txt' },
    );
    const created = await ownerCall(stack, 'POST', '/v1/agent/jobs', { prompt: 'Write the plan', model: AGENT_MODEL, repo: null });
    assert.equal(created.status, 201, await created.clone().text());
    const originalId = ((await created.json()) as { job_id: string }).job_id;
    assert.equal((await settled(stack, originalId, 1)).turns[0]!.state, 'completed');
    const originalWho = /uid=(\d+) host=(\S+)/.exec(toolOutputs(stack).join('\n'));
    assert.ok(originalWho, 'the original printed who it is');

    upstream.enqueue(
      { kind: 'tool_call', name: 'bash', arguments: { command: `cat plan.txt && printf 'from the fork\\n' >> plan.txt && ${GIT} commit -q -am fork && git log --format=%s | tr '\\n' ' ' && ${WHO}` } },
      { kind: 'json', content: 'Fork extended the plan' },
    );
    const forked = await ownerCall(stack, 'POST', `/v1/agent/jobs/${originalId}/fork`, { anchor_seq: 1, prompt: 'Try another plan' });
    assert.equal(forked.status, 201, await forked.clone().text());
    const forkId = ((await forked.json()) as { job_id: string }).job_id;
    const forkView = await settled(stack, forkId, 1);
    assert.deepEqual(forkView.turns.map((t) => [t.state, t.result]), [['completed', 'Fork extended the plan']], forkView.turns[0]!.error);

    const forkOutput = toolOutputs(stack).find((c) => c.includes('fork plan'));
    assert.ok(forkOutput, `the fork's commit on top of the original's: ${toolOutputs(stack).join(' | ')}`);
    assert.match(forkOutput, /from the original/, 'the fork sees the file the original wrote');
    const forkWho = /uid=(\d+) host=(\S+)/.exec(forkOutput);
    assert.ok(forkWho);
    assert.equal(forkWho[2], originalWho[2], 'the same container');
    assert.notEqual(forkWho[1], originalWho[1], 'another member UID');
    const containers = await docker().listContainers({ all: true, filters: { label: [`agent.chat=${originalId}`] } });
    assert.equal(containers.length, 1);
    assert.ok(containers[0]!.Id.startsWith(originalWho[2]!), 'the one container of the group');

    const forkEvents = await eventsOf(stack, forkId);
    const forkTypes = forkEvents.map((e) => e.event_type ?? '');
    assert.deepEqual(forkTypes.filter((t) => t.startsWith('turn_')), ['turn_queued', 'turn_started', 'turn_completed'], JSON.stringify(forkEvents.map((e) => e.text.slice(0, 120))));
    assert.ok(forkEvents.some((e) => e.text.includes('Fork extended the plan')), 'the fork\'s answer streams under the fork');
    assert.ok(!(await eventsOf(stack, originalId)).some((e) => e.text.includes('Fork extended the plan')), 'and not under the original');

    upstream.enqueue(
      { kind: 'tool_call', name: 'bash', arguments: { command: `cat plan.txt && printf 'original again\\n' >> plan.txt && ${GIT} commit -q -am again && git log --format=%s | tr '\\n' ' '` } },
      { kind: 'json', content: 'Original goes on' },
    );
    const next = await ownerCall(stack, 'POST', `/v1/agent/jobs/${originalId}/turns`, { prompt: 'Go on' });
    assert.equal(next.status, 201, await next.clone().text());
    const originalView = await settled(stack, originalId, 2);
    assert.deepEqual(originalView.turns.map((t) => [t.state, t.result]), [['completed', 'Wrote plan.txt'], ['completed', 'Original goes on']], originalView.turns[1]!.error);
    assert.ok(toolOutputs(stack).some((c) => c.includes('from the fork') && c.includes('again fork plan')), 'the original commits on top of the fork\'s commit');
  });
});
