/**
 * The limits a turn is admitted with (docs/agent-admin.md "Host settings"), on real PostgreSQL:
 * admission records the host settings' limits on the attempt and returns them to the workflow;
 * the host's attempt context answers that attempt's own limits (whatever the API's environment
 * says now), and an attempt admitted without limits (before host settings) keeps the environment's.
 */
import assert from 'node:assert/strict';
import { admitTurn } from '../../../../agent/jobs/turn-admission';
import { attemptContext } from '../../../../agent/jobs/attempt-context';
import { turnLimitsFrom } from '../../../../agent/settings/host-settings';
import { insertHost, insertJobWithTurn, insertOwner } from '../../../support/agent-rows';
import { freshDatabase, type TestDatabase } from '../../../support/db';

const LIMITS = turnLimitsFrom({
  turn_time_limit_seconds: 240, container_memory_mib: 1024, container_cpus: 1, container_pids: 300, container_open_files: 2048, container_disk_gib: 7, repository_max_mib: 50,
  command_timeout_seconds: 45, command_output_max_kib: 8, file_read_max_kib: 32,
});

describe('turn limits recorded at admission (PostgreSQL)', () => {
  let t: TestDatabase;
  let ownerId: number;

  before(async () => {
    t = await freshDatabase();
    ownerId = await insertOwner(t.db, 'limits-owner@example.test');
    await insertHost(t.db, 'limits-host', { slotsTotal: 10 });
  });
  after(async () => {
    await t?.drop();
  });

  it('records the limits on the attempt, returns them, and the attempt context answers them', async () => {
    const { jobId } = await insertJobWithTurn(t.db, ownerId);
    const admitted = await admitTurn(t.db, { jobId, seq: 1 }, { staleSeconds: 90, defaultSlots: 3, turnLimits: LIMITS });
    assert.equal(admitted.kind, 'admitted');
    if (admitted.kind !== 'admitted') return;
    assert.deepEqual(admitted.limits, LIMITS);
    const row = await t.db('agent_attempts').where({ attempt_id: admitted.attemptId }).first<{ limits: unknown }>('limits');
    assert.deepEqual(row?.limits, LIMITS);
    const context = await attemptContext(t.db, { hostId: 'limits-host', attemptId: admitted.attemptId, turnTimeLimitSeconds: 1800 });
    assert.equal(context.turn_time_limit_seconds, 240, 'the attempt\'s limit, not the environment\'s 1800');
    assert.deepEqual(context.workspace_limits, { command_timeout_seconds: 45, command_output_max_bytes: 8192, file_read_max_bytes: 32_768 });
  });

  it('an attempt admitted without limits keeps the environment\'s time limit and sends no workspace limits', async () => {
    const { jobId } = await insertJobWithTurn(t.db, ownerId);
    const admitted = await admitTurn(t.db, { jobId, seq: 1 }, { staleSeconds: 90, defaultSlots: 3 });
    assert.equal(admitted.kind, 'admitted');
    if (admitted.kind !== 'admitted') return;
    assert.equal(admitted.limits, undefined);
    const context = await attemptContext(t.db, { hostId: 'limits-host', attemptId: admitted.attemptId, turnTimeLimitSeconds: 1800 });
    assert.equal(context.turn_time_limit_seconds, 1800);
    assert.equal(context.workspace_limits, undefined);
  });
});
