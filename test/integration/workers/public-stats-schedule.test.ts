/**
 * The daily public stats Schedule (docs/public-stats.md) as the real control worker keeps it: the
 * worker (`workers/control.ts`, a child process) starts against the Temporal dev server and a
 * fresh PostgreSQL database, the Schedule then exists with its definition (daily at 03:17 UTC,
 * overlap SKIP, the public stats workflow on the worker's queue), and triggering it runs the job
 * on that worker, which stores a snapshot of the database's rows.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ScheduleOverlapPolicy, type Client } from '@temporalio/client';
import type { PublicStatsResult } from '../../../workflows/definitions/public-stats';
import { freshDatabase, type TestDatabase } from '../../support/db';
import { temporalEnv, uniqueTaskQueue } from '../../support/temporal';
import { waitFor } from '../../support/wait';

const ROOT = join(__dirname, '../../..');

describe('public stats: the control worker\'s daily Schedule (Temporal, PostgreSQL)', function () {
  this.timeout(300_000);
  let t: TestDatabase;
  let client: Client;
  let worker: ChildProcess | undefined;
  let output = '';
  const suffix = randomUUID().slice(0, 8);
  const ids = { PUBLIC_STATS_SCHEDULE_ID: `public-stats-${suffix}`, AGENT_DELETION_SWEEP_SCHEDULE_ID: `sweep-${suffix}`, AGENT_IDLE_STOP_SCHEDULE_ID: `idle-${suffix}` };
  const queue = uniqueTaskQueue('public-stats');

  before(async () => {
    t = await freshDatabase();
    const env = await temporalEnv();
    client = env.client;
    worker = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'workers/control.ts')], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '', LOG_LEVEL: 'info', DATABASE_URL: t.url, TEMPORAL_ADDRESS: env.address, TEMPORAL_CONTROL_TASK_QUEUE: queue,
        GATEWAY_GRANT_DISPATCH_TOKEN: 'public-stats-test-dispatch-token-0123456789', AGENT_GATEWAY_URL: 'http://127.0.0.1:9',
        OBJECT_STORE_FS_ROOT: mkdtempSync(join(tmpdir(), 'public-stats-store-')), SHUTDOWN_GRACE_SECONDS: '5', ...ids,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    worker.stdout!.setEncoding('utf8').on('data', (chunk: string) => { output += chunk; });
    worker.stderr!.setEncoding('utf8').on('data', (chunk: string) => { output += chunk; });
    await waitFor(() => output.includes('control worker polling') || worker!.exitCode !== null, 'the control worker polling', 240_000);
    assert.equal(worker.exitCode, null, `the control worker exited:\n${output}`);
  });
  after(async () => {
    if (worker && worker.exitCode === null) {
      const exited = new Promise((resolve) => worker!.once('exit', resolve));
      worker.kill('SIGTERM');
      await exited;
    }
    for (const id of Object.values(ids)) await client?.schedule.getHandle(id).delete().catch(() => undefined);
    await t?.drop();
  });

  it('exists after the worker starts: daily at 03:17 UTC, overlap SKIP, the public stats workflow on the control queue', async () => {
    assert.match(output, /public stats snapshot scheduled daily/);
    const described = await client.schedule.getHandle(ids.PUBLIC_STATS_SCHEDULE_ID).describe();
    assert.equal(described.spec.calendars?.length, 1);
    assert.deepEqual(described.spec.calendars?.[0]?.hour, [{ start: 3, end: 3, step: 1 }]);
    assert.deepEqual(described.spec.calendars?.[0]?.minute, [{ start: 17, end: 17, step: 1 }]);
    assert.equal(described.policies.overlap, ScheduleOverlapPolicy.SKIP);
    assert.equal(described.action.type, 'startWorkflow');
    assert.equal(described.action.workflowType, 'publicStatsWorkflow');
    assert.equal(described.action.taskQueue, queue);
    assert.deepEqual(described.action.args, [{ weeks: 26 }]);
  });

  it('triggered, runs the job on the worker, which stores a snapshot of the database', async () => {
    const [user] = await t.db('users').insert({ email: `stats-${suffix}@example.com` }).returning<Array<{ id: string }>>('id');
    await t.db('api_logs').insert({ request_id: 'r1', user_id: user!.id, model: 'm', surface: 'chat', status: 200 });
    const schedule = client.schedule.getHandle(ids.PUBLIC_STATS_SCHEDULE_ID);
    await schedule.trigger(ScheduleOverlapPolicy.SKIP);
    const described = await waitFor(async () => {
      const d = await schedule.describe();
      return d.info.numActionsTaken > 0 && d;
    }, 'the triggered run started', 30_000);
    const started = described.info.recentActions.at(-1)!.action.workflow;
    const result = await client.workflow.getHandle<() => Promise<PublicStatsResult>>(started.workflowId, started.firstExecutionRunId).result();
    const rows = await t.db('public_stats_snapshots').select<Array<{ id: string; window_weeks: number; content: { window: { end: string } } }>>('id', 'window_weeks', 'content');
    assert.equal(rows.length, 1);
    assert.equal(Number(rows[0]!.id), result.snapshotId);
    assert.equal(rows[0]!.window_weeks, 26);
    assert.equal(rows[0]!.content.window.end, result.windowEnd);
  });
});
