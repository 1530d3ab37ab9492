/**
 * The host runner's heartbeat against the real API: it reports its default slots, learns the
 * operator's saved slots from the answer and reports them from the next beat (runner version 2).
 * Slot changes go through the host's workflow (Temporal dev server, a control worker on this
 * file's task queue), so host ids carry this run's suffix.
 */
import assert from 'node:assert/strict';
import { enrollHost } from '../../agent/hosts/host-registry';
import { createHeartbeat, RUNNER_VERSION, type HeartbeatOptions } from '../../workers/host-heartbeat';
import { ADMIN_TOKEN } from '../support/admin';
import { startTestApi, type TestApi } from '../support/api';
import { freshDatabase, type TestDatabase } from '../support/db';
import { testRunId } from '../support/docker';
import { endHostWorkflows, startHostWorker } from '../support/host-workflows';
import { temporalEnv, uniqueTaskQueue } from '../support/temporal';
import { captureLogs } from '../support/logs';
import { waitFor } from '../support/wait';

/** This run's host id suffix (a workflow id `host:<hostId>` names one host on the shared dev server). */
const S = `-${testRunId}`.toLowerCase();

describe('host runner heartbeat', () => {
  let t: TestDatabase;
  let api: TestApi;
  let env: Awaited<ReturnType<typeof temporalEnv>>;
  let worker: { close(): Promise<void> };

  before(async () => {
    t = await freshDatabase();
    env = await temporalEnv();
    const queue = uniqueTaskQueue('host-heartbeat');
    api = await startTestApi({ db: t.db, temporal: env.client, env: { TEMPORAL_CONTROL_TASK_QUEUE: queue } });
    worker = await startHostWorker(env, t.db, queue);
  });
  after(async () => {
    if (env) await endHostWorkflows(env.client, ['beat-host', 'loop-host', 'lost-host'].map((h) => `${h}${S}`));
    await worker?.close();
    await api?.close();
    await t?.drop();
  });

  const putSlots = async (hostId: string, slots: number | null): Promise<void> => {
    const res = await fetch(`${api.url}/admin/agent/runner-hosts/${hostId}/slots`, {
      method: 'PUT', headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify({ slots }),
    });
    assert.equal(res.status, 200, await res.text());
  };
  const reported = async (hostId: string): Promise<{ slots_total: number | null; runner_version: string | null }> =>
    (await t.db('agent_hosts').where({ host_id: hostId }).first<{ slots_total: number | null; runner_version: string | null }>('slots_total', 'runner_version'));
  const options = (hostId: string, credential: string, log = captureLogs('host-runner').log): HeartbeatOptions =>
    ({ apiUrl: api.url, hostId, credential, defaultSlots: 3, runtime: 'docker-test', log });

  it('applies slots_configured on the next beat, and returns to the default for null', async () => {
    const { credential } = await enrollHost(t.db, `beat-host${S}`);
    const logs = captureLogs('host-runner');
    const heartbeat = createHeartbeat(options(`beat-host${S}`, credential, logs.log));
    const first = await heartbeat.beatOnce();
    assert.deepEqual(first, { ok: true, slotsTotal: 3, answer: { host_id: `beat-host${S}`, slots_configured: null, slots_effective: 3 } });
    assert.deepEqual(await reported(`beat-host${S}`), { slots_total: 3, runner_version: RUNNER_VERSION });

    await putSlots(`beat-host${S}`, 6);
    const learns = await heartbeat.beatOnce();
    assert.deepEqual(learns, { ok: true, slotsTotal: 3, answer: { host_id: `beat-host${S}`, slots_configured: 6, slots_effective: 3 } });
    assert.equal(heartbeat.slotsTotal(), 6);
    const applied = logs.lines.find((l) => l.event === 'agent_host_slots_applied');
    assert.deepEqual([applied?.slots_previous, applied?.slots_total], [3, 6]);
    assert.ok(!JSON.stringify(logs.lines).includes(credential), 'the credential is never logged');
    const confirms = await heartbeat.beatOnce();
    assert.deepEqual(confirms, { ok: true, slotsTotal: 6, answer: { host_id: `beat-host${S}`, slots_configured: 6, slots_effective: 6 } });
    assert.equal((await reported(`beat-host${S}`)).slots_total, 6);

    await putSlots(`beat-host${S}`, 2);
    assert.equal((await heartbeat.beatOnce()).slotsTotal, 6);
    assert.equal((await heartbeat.beatOnce()).slotsTotal, 2);
    await putSlots(`beat-host${S}`, null);
    await heartbeat.beatOnce();
    assert.equal(heartbeat.slotsTotal(), 3, 'the host default again');
  });

  it('keeps beating on its interval and confirms a raise without a restart', async () => {
    const { credential } = await enrollHost(t.db, `loop-host${S}`);
    const heartbeat = createHeartbeat(options(`loop-host${S}`, credential));
    heartbeat.start(50);
    try {
      await waitFor(async () => (await reported(`loop-host${S}`)).slots_total === 3, 'the first beat');
      await putSlots(`loop-host${S}`, 9);
      await waitFor(async () => (await reported(`loop-host${S}`)).slots_total === 9, 'the runner reporting the raised slots');
    } finally {
      heartbeat.stop();
    }
  });

  it('reports a refused or failed beat without throwing', async () => {
    const { credential } = await enrollHost(t.db, `lost-host${S}`);
    const refused = await createHeartbeat(options(`lost-host${S}`, `${credential}x`)).beatOnce();
    assert.deepEqual(refused, { ok: false, slotsTotal: 3, status: 401 });
    const unreachable = await createHeartbeat({ ...options(`lost-host${S}`, credential), apiUrl: 'http://127.0.0.1:1' }).beatOnce();
    assert.equal(unreachable.ok, false);
    assert.ok('error' in unreachable && unreachable.error);
    assert.equal((await reported(`lost-host${S}`)).slots_total, null, 'nothing was recorded');
  });
});
