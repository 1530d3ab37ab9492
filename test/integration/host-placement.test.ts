/**
 * Host placement on real PostgreSQL: concurrent admissions never exceed a host's effective slots;
 * a retained chat goes only to its own host; offline or removal-requested hosts are never chosen.
 */
import assert from 'node:assert/strict';
import { placeTurn, type Placement, type PlaceTurnInput } from '../../agent/hosts/placement';
import type { ExecutionProfile } from '../../lib/execution-profiles';
import { createDb, type Db } from '../../lib/db';
import { insertHost, insertJobWithTurn, insertOwner, insertRunningAttempt } from '../support/agent-rows';
import { freshDatabase, type TestDatabase } from '../support/db';

const STALE = 90;
const DEFAULT_SLOTS = 3;

describe('host placement', () => {
  let t: TestDatabase;
  /** A pool wide enough for 20 transactions at once. */
  let wide: Db;
  let ownerId: number;

  before(async () => {
    t = await freshDatabase();
    wide = createDb({ url: t.url, poolMax: 22, applicationName: 'placement-test' });
    ownerId = await insertOwner(t.db, 'owner@example.test');
  });
  after(async () => {
    await wide.destroy();
    await t.drop();
  });
  beforeEach(async () => {
    await t.db('agent_attempts').del();
    await t.db('agent_turns').del();
    await t.db('agent_jobs').del();
    await t.db('agent_hosts').del();
  });

  const input = (jobHostId: string | null = null, profile: ExecutionProfile = 'untrusted-vm-v1'): PlaceTurnInput => ({ jobHostId, staleSeconds: STALE, defaultSlots: DEFAULT_SLOTS, profile });
  const place = (jobHostId: string | null = null, profile?: ExecutionProfile): Promise<Placement> => t.db.transaction((trx) => placeTurn(trx, input(jobHostId, profile)));
  const running = async (hostId: string): Promise<number> =>
    Number((await t.db('agent_attempts').where({ host_id: hostId, state: 'running' }).count<Array<{ count: string }>>({ count: '*' }))[0]!.count);

  /** Places `n` turns at once, each in its own transaction that inserts its attempt when admitted. */
  async function placeConcurrently(n: number, jobHostId: string | null): Promise<Placement[]> {
    const turns = await Promise.all(Array.from({ length: n }, () => insertJobWithTurn(t.db, ownerId, jobHostId)));
    return Promise.all(turns.map((ids) => wide.transaction(async (trx) => {
      const placement = await placeTurn(trx, input(jobHostId));
      // Widen the window between the decision and the insert: without the row locks every
      // transaction would still see zero running attempts here.
      await trx.raw('select pg_sleep(0.01)');
      if ('hostId' in placement) await insertRunningAttempt(trx, { ...ids, hostId: placement.hostId });
      return placement;
    })));
  }

  it('admits at most the effective slots of a 3-slot host under 20 concurrent new chats', async () => {
    await insertHost(t.db, 'host-a', { slotsTotal: 3 });
    const placements = await placeConcurrently(20, null);
    assert.equal(placements.filter((p) => 'hostId' in p).length, 3);
    assert.equal(placements.filter((p) => 'wait' in p && p.wait === 'host_full').length, 17);
    assert.equal(await running('host-a'), 3);
  });

  it('admits at most 3 of 20 concurrent turns of retained chats on their 3-slot host', async () => {
    await insertHost(t.db, 'host-a', { slotsTotal: 3 });
    await insertHost(t.db, 'host-b', { slotsTotal: 10 });
    const placements = await placeConcurrently(20, 'host-a');
    assert.deepEqual(placements.filter((p) => 'hostId' in p), [{ hostId: 'host-a' }, { hostId: 'host-a' }, { hostId: 'host-a' }]);
    assert.equal(placements.filter((p) => 'wait' in p && p.wait === 'host_full').length, 17);
    assert.equal(await running('host-a'), 3);
    assert.equal(await running('host-b'), 0);
  });

  it('spreads 20 concurrent new chats over two hosts up to the sum of their slots', async () => {
    await insertHost(t.db, 'host-a', { slotsTotal: 3 });
    await insertHost(t.db, 'host-b', { slotsSaved: 2, slotsTotal: 5 });
    const placements = await placeConcurrently(20, null);
    assert.equal(placements.filter((p) => 'hostId' in p).length, 5);
    assert.equal(await running('host-a'), 3);
    assert.equal(await running('host-b'), 2);
  });

  it('places a retained chat only on its own host, waiting when it is full or offline', async () => {
    await insertHost(t.db, 'host-a', { slotsTotal: 2 });
    await insertHost(t.db, 'host-b', { slotsTotal: 8 });
    assert.deepEqual(await place('host-a'), { hostId: 'host-a' });
    for (let i = 0; i < 2; i += 1) await insertRunningAttempt(t.db, { ...(await insertJobWithTurn(t.db, ownerId, 'host-a')), hostId: 'host-a' });
    assert.deepEqual(await place('host-a'), { wait: 'host_full' });
    await insertHost(t.db, 'host-a', { slotsTotal: 4, heartbeatAgeSeconds: STALE + 5 });
    assert.deepEqual(await place('host-a'), { wait: 'host_offline' });
    await insertHost(t.db, 'host-a', { slotsTotal: 4, removalRequested: true });
    assert.deepEqual(await place('host-a'), { wait: 'host_offline' });
    await insertHost(t.db, 'host-a', { slotsTotal: 4 });
    assert.deepEqual(await place('host-a'), { hostId: 'host-a' });
  });

  it('never chooses an offline, never-seen or removal-requested host for a new chat', async () => {
    await insertHost(t.db, 'host-a', { slotsTotal: 8, heartbeatAgeSeconds: STALE + 5 });
    await insertHost(t.db, 'host-b', { slotsTotal: 8, heartbeatAgeSeconds: null });
    await insertHost(t.db, 'host-c', { slotsTotal: 8, removalRequested: true });
    assert.deepEqual(await place(), { wait: 'no_host' });
    await insertHost(t.db, 'host-d', { slotsTotal: 2 });
    assert.deepEqual(await place(), { hostId: 'host-d' });
  });

  it('chooses the host with the most free slots, ties by host id, and uses the lower of saved and reported', async () => {
    await insertHost(t.db, 'host-b', { slotsTotal: 4 });
    await insertHost(t.db, 'host-a', { slotsTotal: 4 });
    await insertHost(t.db, 'host-c', { slotsSaved: 2, slotsTotal: 6 });
    assert.deepEqual(await place(), { hostId: 'host-a' });
    await insertRunningAttempt(t.db, { ...(await insertJobWithTurn(t.db, ownerId)), hostId: 'host-a' });
    assert.deepEqual(await place(), { hostId: 'host-b' });
    await insertHost(t.db, 'host-c', { slotsSaved: null, slotsTotal: 6 });
    assert.deepEqual(await place(), { hostId: 'host-c' });
  });

  it('places a turn only on a host that attests its execution profile, and says which kind of wait it is', async () => {
    await insertHost(t.db, 'host-a', { slotsTotal: 8, capabilities: ['container', 'trusted-v1', 'shared-sandbox-v1'] });
    await insertHost(t.db, 'host-b', { slotsTotal: 2, capabilities: ['container'] });
    assert.deepEqual(await place(null, 'untrusted-vm-v1'), { wait: 'no_attested_host' }, 'online hosts, none attesting the profile');
    assert.deepEqual(await place(null, 'trusted-v1'), { hostId: 'host-a' });
    assert.deepEqual(await place('host-a', 'untrusted-vm-v1'), { wait: 'host_not_attested' }, 'a retained chat whose host stopped attesting waits for it');
    await insertHost(t.db, 'host-c', { slotsTotal: 2, capabilities: ['container', 'untrusted-vm-v1', 'trusted-v1'] });
    assert.deepEqual(await place(null, 'untrusted-vm-v1'), { hostId: 'host-c' }, 'fewer free slots, but the only host attesting the profile');
    await insertHost(t.db, 'host-c', { slotsTotal: 2, heartbeatAgeSeconds: STALE + 5, capabilities: ['untrusted-vm-v1'] });
    assert.deepEqual(await place('host-c', 'untrusted-vm-v1'), { wait: 'host_offline' }, 'offline is said before attestation');
  });

  it('counts only running attempts against the slots', async () => {
    await insertHost(t.db, 'host-a', { slotsTotal: 2 });
    for (let i = 0; i < 2; i += 1) {
      const ids = await insertJobWithTurn(t.db, ownerId, 'host-a');
      const attemptId = await insertRunningAttempt(t.db, { ...ids, hostId: 'host-a' });
      await t.db('agent_attempts').where({ attempt_id: attemptId }).update({ state: i === 0 ? 'completed' : 'abandoned', finished_at: t.db.fn.now() });
    }
    assert.deepEqual(await place('host-a'), { hostId: 'host-a' });
  });
});
