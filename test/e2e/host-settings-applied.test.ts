/**
 * Host settings reach new turns and new sandboxes (docs/agent-admin.md "Host settings"),
 * with the built control worker and host runner as real processes: a limit saved through the API
 * is picked up by the control worker's own settings poll, recorded on the next admitted turn's
 * attempt, and a container created for that turn gets the saved memory and CPU caps (as
 * `docker inspect` shows them). An existing container is never changed: a later turn of the same
 * chat runs in it as it was, and only a new chat's container gets the new caps.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { admin } from '../support/admin';
import { AGENT_MODEL, docker, ownerCall, startAgentStack, type AgentStack } from '../support/agent-stack';
import { startControlProcess, startHostProcess, type WorkerProcess } from '../support/agent-processes';
import { waitFor } from '../support/wait';

const MIB = 1024 * 1024;

describe('host settings applied to new turns and sandboxes (built workers, Temporal, Docker, PostgreSQL)', function () {
  this.timeout(300_000);
  let stack: AgentStack;
  let control: WorkerProcess | undefined;
  let host: WorkerProcess | undefined;

  before(async () => {
    stack = await startAgentStack({ workers: 'none' });
    control = await startControlProcess(stack);
    host = await startHostProcess(stack, mkdtempSync(join(tmpdir(), 'host-settings-store-')));
  });
  after(async () => {
    await control?.stop().catch(() => undefined);
    await host?.stop().catch(() => undefined);
    await stack?.close();
  });

  /** Saves host settings through the API and waits until the control worker process applied that revision by its own poll. */
  async function saveLimits(settings: Record<string, unknown>): Promise<void> {
    const saved = await admin<{ revision: string }>(stack.api, 'PUT', '/admin/agent/host-settings', { settings });
    assert.equal(saved.status, 200, JSON.stringify(saved.body));
    const applied = new RegExp(`"event":"agent_settings_applied"[^\\n]*"revision":"${saved.body.revision}"`);
    await waitFor(() => applied.test(control!.output()), `the control worker applies revision ${saved.body.revision}`, 5000);
  }

  const turnStates = async (jobId: string) => (await stack.t.db('agent_turns').where({ job_id: jobId }).orderBy('seq').select<Array<{ state: string }>>('state')).map((r) => r.state);
  const completed = (jobId: string, seq: number) => waitFor(async () => (await turnStates(jobId))[seq - 1] === 'completed', `turn ${seq} of ${jobId} completed`, 120_000);

  async function newChat(prompt: string): Promise<string> {
    const res = await ownerCall(stack, 'POST', '/v1/agent/jobs', { prompt, model: AGENT_MODEL, repo: null });
    assert.equal(res.status, 201, await res.clone().text());
    const jobId = ((await res.json()) as { job_id: string }).job_id;
    await completed(jobId, 1);
    return jobId;
  }

  async function containerOf(jobId: string): Promise<{ id: string; memory: number; nanoCpus: number }> {
    const { container_id: id } = await stack.t.db('agent_sandboxes as s').join('agent_jobs as j', 'j.group_id', 's.group_id')
      .where('j.job_id', jobId).first<{ container_id: string }>('s.container_id');
    const info = await docker().getContainer(id).inspect();
    return { id, memory: info.HostConfig.Memory ?? 0, nanoCpus: info.HostConfig.NanoCpus ?? 0 };
  }

  const attemptLimits = async (jobId: string) => (await stack.t.db('agent_attempts').where({ job_id: jobId }).orderBy('started_at')
    .select<Array<{ limits: Record<string, number> | null }>>('limits')).map((r) => r.limits);

  it('a new sandbox gets the saved caps; a later turn keeps its container as it was; a new chat gets the changed caps', async () => {
    await saveLimits({ container_memory_mib: 512, container_cpus: 0.5, turn_time_limit_seconds: 300, command_timeout_seconds: 30 });
    const first = await newChat('Start a sandbox under the saved limits');
    const created = await containerOf(first);
    assert.equal(created.memory, 512 * MIB, 'the saved memory cap, not the runner\'s 4 GiB');
    assert.equal(created.nanoCpus, 0.5e9);
    const [recorded] = await attemptLimits(first);
    assert.equal(recorded?.turnTimeLimitSeconds, 300);
    assert.equal(recorded?.memoryBytes, 512 * MIB);
    assert.equal(recorded?.commandTimeoutSeconds, 30);

    await saveLimits({ container_memory_mib: 768 });
    const again = await ownerCall(stack, 'POST', `/v1/agent/jobs/${first}/turns`, { prompt: 'A second turn in the same sandbox' });
    assert.equal(again.status, 201, await again.clone().text());
    await completed(first, 2);
    const kept = await containerOf(first);
    assert.equal(kept.id, created.id, 'the same retained container');
    assert.equal(kept.memory, 512 * MIB, 'a running sandbox keeps its caps');
    assert.equal((await attemptLimits(first))[1]?.memoryBytes, 768 * MIB, 'the later turn was admitted under the new settings');

    const second = await newChat('Start another sandbox');
    const changed = await containerOf(second);
    assert.equal(changed.memory, 768 * MIB);
    assert.equal(changed.nanoCpus, 0.5e9, 'keys not changed keep their saved value');
  });
});
