/**
 * A sandbox that fills its disk, over the real stack (PostgreSQL, Temporal, Docker, the gateway
 * with a fake LLM upstream scripting the built-in driver's tool calls): host setting
 * `container_disk_gib` sizes the disk of a new sandbox; a member's write past it fails with "No
 * space left on device" in its own command; the turn that can no longer save its conversation
 * fails with a message saying the sandbox's disk is full; another chat's sandbox works meanwhile;
 * the chat's next turn works once it deleted the files (docs/execution-profiles.md "Containment").
 */
import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { admin } from '../support/admin';
import { AGENT_MODEL, ownerCall, reviewedGroup, startAgentStack, type AgentStack } from '../support/agent-stack';
import { TEST_DISK_ROOT } from '../support/docker';
import { waitFor } from '../support/wait';
import { sandboxDiskPaths } from '../../activities/docker/sandbox-disk';

interface TurnView { seq: number; state: string; result: string | null; error?: string | null }

const GIB = 1024 ** 3;

describe('a sandbox that fills its disk (PostgreSQL + Temporal + Docker + gateway)', function () {
  this.timeout(240_000);
  let stack: AgentStack;

  before(async () => {
    stack = await startAgentStack();
  });
  after(async () => {
    await stack?.close();
  });

  async function turns(jobId: string, count: number): Promise<TurnView[]> {
    return waitFor(async () => {
      const view = (await (await ownerCall(stack, 'GET', `/v1/agent/jobs/${jobId}`)).json()) as { turns: TurnView[] };
      return view.turns.length === count && view.turns.every((t) => ['completed', 'failed', 'cancelled'].includes(t.state)) ? view.turns : undefined;
    }, `${count} settled turns of ${jobId}`, 150_000);
  }

  async function createJob(prompt: string): Promise<string> {
    const res = await ownerCall(stack, 'POST', '/v1/agent/jobs', { prompt, model: AGENT_MODEL, repo: null });
    assert.equal(res.status, 201, await res.clone().text());
    return ((await res.json()) as { job_id: string }).job_id;
  }

  /** The output of the chat's bash tool results, in order. */
  async function toolOutputs(jobId: string): Promise<string[]> {
    const rows = await stack.t.db('agent_events').where({ job_id: jobId, event_type: 'tool_result' }).orderBy('seq').select<Array<{ payload: { output?: string } }>>('payload');
    return rows.map((r) => String(r.payload.output));
  }

  it('fails the turn that filled it with a clear message, leaves another chat its sandbox, and works again once files are deleted', async () => {
    const saved = await admin<{ settings: Record<string, { value: unknown; applies_to: string }> }>(stack.api, 'PUT', '/admin/agent/host-settings', { settings: { container_disk_gib: 1 } });
    assert.equal(saved.status, 200, JSON.stringify(saved.body));
    assert.deepEqual(saved.body.settings.container_disk_gib, { ...saved.body.settings.container_disk_gib, value: 1, applies_to: 'new_sandboxes' });

    stack.upstream.enqueue({ kind: 'tool_call', name: 'bash', arguments: { command: 'dd if=/dev/zero of=fill bs=1M count=1400; echo dd-exit=$?; dd if=/dev/zero of=pad bs=4096 2>/dev/null; echo pad-exit=$?' } });
    const full = await createJob('Fill the disk');
    const [first] = await turns(full, 1);
    assert.equal(first?.state, 'failed');
    assert.match(String(first?.error), /^The sandbox's disk is full \((0\.9|1\.0) GiB for \/workspace, the home directories and \/var\/tmp; host setting container_disk_gib\)/);
    assert.match(String(first?.error), /No space left on device/, 'the driver\'s own failure follows');
    const [fillOutput] = await toolOutputs(full);
    assert.match(String(fillOutput), /dd-exit=1\npad-exit=1[\s\S]*No space left on device/, 'the commands themselves failed with ENOSPC');

    const group = await reviewedGroup(stack, full);
    const disk = sandboxDiskPaths(TEST_DISK_ROOT, `sbx-${group.groupId}`);
    assert.equal(statSync(disk.image).size, GIB, 'the disk has the size of the host setting');
    assert.ok(statSync(disk.image).blocks * 512 <= GIB, 'and the host holds no more than that for it');

    stack.upstream.enqueue(
      { kind: 'tool_call', name: 'bash', arguments: { command: 'head -c 16777216 /dev/zero > ok && stat -c %s ok' } },
      { kind: 'json', content: 'wrote 16 MiB' },
    );
    const other = await createJob('Write a little');
    const [neighbour] = await turns(other, 1);
    assert.equal(neighbour?.state, 'completed', String(neighbour?.error));
    assert.match(String((await toolOutputs(other))[0]), /^16777216/);

    stack.upstream.enqueue(
      { kind: 'tool_call', name: 'bash', arguments: { command: 'rm -f fill pad && head -c 1048576 /dev/zero > after && echo freed' } },
      { kind: 'json', content: 'cleaned up' },
    );
    const res = await ownerCall(stack, 'POST', `/v1/agent/jobs/${full}/turns`, { prompt: 'Delete the big file' });
    assert.equal(res.status, 201, await res.clone().text());
    const [, second] = await turns(full, 2);
    assert.equal(second?.state, 'completed', String(second?.error));
    assert.equal(second?.result, 'cleaned up');
    assert.match(String((await toolOutputs(full)).at(-1)), /^freed/);
  });
});
