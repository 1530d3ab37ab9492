/**
 * Crashes mid-turn, with the built control worker and host runner as real processes killed with
 * SIGKILL: a killed control worker is replaced and the turn finishes exactly once; a killed host
 * runner makes the turn fail cleanly (fenced, its leftover process killed), never run twice, and
 * the chat goes on in the same retained container. Nothing is lost: every turn and event is there.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startAgentStack, ownerCall, docker, containerCommands, AGENT_MODEL, type AgentStack } from '../support/agent-stack';
import { startControlProcess, startHostProcess, type WorkerProcess } from '../support/agent-processes';
import { waitFor } from '../support/wait';

interface TurnRow {
  seq: number;
  state: string;
  result: string | null;
  error: string | null;
}

describe('agent crashes mid-turn (built workers as processes, kill -9)', function () {
  this.timeout(300_000);
  let stack: AgentStack;
  let control: WorkerProcess | undefined;
  let host: WorkerProcess | undefined;
  const storeRoot = mkdtempSync(join(tmpdir(), 'agent-crash-store-'));

  before(async () => {
    stack = await startAgentStack({ workers: 'none' });
    control = await startControlProcess(stack);
    host = await startHostProcess(stack, storeRoot);
  });
  after(async () => {
    await control?.stop().catch(() => undefined);
    await host?.stop().catch(() => undefined);
    await stack?.close();
  });

  async function createJob(prompt: string): Promise<string> {
    const res = await ownerCall(stack, 'POST', '/v1/agent/jobs', { prompt, model: AGENT_MODEL, repo: null });
    assert.equal(res.status, 201, await res.clone().text());
    return ((await res.json()) as { job_id: string }).job_id;
  }

  const turns = (jobId: string) => stack.t.db('agent_turns').where({ job_id: jobId }).orderBy('seq').select<TurnRow[]>('seq', 'state', 'result', 'error');
  const attempts = (jobId: string) => stack.t.db('agent_attempts').where({ job_id: jobId }).orderBy('started_at').select<Array<{ turn_id: string; state: string; started_at: Date; finished_at: Date | null }>>('turn_id', 'state', 'started_at', 'finished_at');
  const settled = (jobId: string, count: number) => waitFor(async () => {
    const rows = await turns(jobId);
    return rows.length === count && rows.every((t) => ['completed', 'failed', 'cancelled'].includes(t.state)) ? rows : undefined;
  }, `${count} settled turns`, 120_000);
  const running = (jobId: string, seq: number) => waitFor(async () => (await turns(jobId)).find((t) => t.seq === seq)?.state === 'running', `turn ${seq} running`, 60_000);

  async function assertNoOverlap(jobId: string): Promise<void> {
    const rows = await attempts(jobId);
    for (let i = 1; i < rows.length; i += 1) {
      assert.ok(rows[i - 1]!.finished_at && rows[i - 1]!.finished_at! <= rows[i]!.started_at, 'attempts of one chat never overlap');
    }
  }

  async function eventTypes(jobId: string): Promise<string[]> {
    const rows = await stack.t.db('agent_events').where({ job_id: jobId }).orderBy('event_id').select<Array<{ event_type: string }>>('event_type');
    return rows.map((r) => r.event_type);
  }

  it('finishes the turn exactly once when the control worker is killed mid-turn and replaced', async () => {
    stack.upstream.enqueue(
      { kind: 'tool_call', name: 'bash', arguments: { command: 'sleep 4; echo survived > crash.txt' } },
      { kind: 'json', content: 'first done' },
      { kind: 'json', content: 'second done' },
    );
    const jobId = await createJob('Survive a control worker crash');
    await ownerCall(stack, 'POST', `/v1/agent/jobs/${jobId}/turns`, { prompt: 'and then this' });
    await running(jobId, 1);
    await waitFor(() => stack.upstream.requests.length >= 1, 'the agent asked the model');
    await control!.kill9();
    control = await startControlProcess(stack);
    const rows = await settled(jobId, 2);
    assert.deepEqual(rows.map((t) => [t.state, t.result]), [['completed', 'first done'], ['completed', 'second done']]);
    const attemptRows = await attempts(jobId);
    assert.equal(attemptRows.length, 2, 'one attempt per turn: nothing ran twice');
    await assertNoOverlap(jobId);
    const types = await eventTypes(jobId);
    assert.equal(types.filter((t) => t === 'turn_completed').length, 2);
    assert.equal(types.filter((t) => t === 'turn_started').length, 2);
  });

  it('fails the turn cleanly when the host runner is killed mid-turn, then the chat goes on in the same container', async () => {
    stack.upstream.enqueue(
      { kind: 'tool_call', name: 'bash', arguments: { command: 'echo kept > kept.txt; sleep 600' } },
    );
    const jobId = await createJob('Survive a host runner crash');
    await running(jobId, 1);
    await waitFor(async () => {
      const [c] = await docker().listContainers({ filters: { label: [`agent.chat=${jobId}`] } });
      if (!c) return false;
      return (await containerCommands(c.Id)).some((cmd) => cmd.includes('sleep 600'));
    }, 'the tool command is running in the sandbox', 60_000);
    await host!.kill9();
    host = await startHostProcess(stack, storeRoot);
    const [first] = await settled(jobId, 1);
    assert.equal(first!.state, 'failed');
    assert.match(first!.error ?? '', /host runner stopped responding/);
    const [attempt] = await attempts(jobId);
    assert.equal(attempt!.state, 'abandoned');

    const [container] = await docker().listContainers({ filters: { label: [`agent.chat=${jobId}`] } });
    await waitFor(async () => !(await containerCommands(container!.Id)).some((cmd) => cmd.includes('sleep 600')),
      'the lost attempt\'s process was killed', 60_000);

    stack.upstream.enqueue(
      { kind: 'tool_call', name: 'bash', arguments: { command: 'cat kept.txt' } },
      { kind: 'json', content: 'still here' },
    );
    const next = await ownerCall(stack, 'POST', `/v1/agent/jobs/${jobId}/turns`, { prompt: 'is the file still there?' });
    assert.equal(next.status, 201);
    const rows = await settled(jobId, 2);
    assert.deepEqual(rows.map((t) => t.state), ['failed', 'completed']);
    const lastToolResult = stack.upstream.requests.at(-1)?.rawBody ?? '';
    assert.match(lastToolResult, /kept/, 'the workspace survived the crash');
    const containers = await docker().listContainers({ all: true, filters: { label: [`agent.chat=${jobId}`] } });
    assert.equal(containers.length, 1, 'still one retained container');
    await assertNoOverlap(jobId);
    const types = await eventTypes(jobId);
    assert.deepEqual(types.filter((t) => t.startsWith('turn_')), ['turn_queued', 'turn_started', 'turn_failed', 'turn_queued', 'turn_started', 'turn_completed']);
  });
});
