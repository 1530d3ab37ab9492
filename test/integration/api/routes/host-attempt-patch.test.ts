/**
 * The patch upload (`POST /v1/agent/hosts/:hostId/attempts/:attemptId/patch`; docs/publisher.md
 * "Upload") through the real API on real PostgreSQL, with the host runner's client: only the turn's
 * running attempt on the host that holds it may upload (a finished, superseded or other host's
 * attempt is refused with 409 and nothing is stored); one row per turn, so a second upload never
 * replaces the first; bad input is a 400 or 413 naming the problem; the tool-relay credentials
 * cannot upload (a tool call must never replace or add a turn's diff).
 */
import assert from 'node:assert/strict';
import { enrollHost } from '../../../../agent/hosts/host-registry';
import { AttemptNotCurrentError, HostApiClient } from '../../../../activities/agent/host-api-client';
import { startTestApi, type TestApi } from '../../../support/api';
import { freshDatabase, type TestDatabase } from '../../../support/db';
import { createAttempt, createJob, createOwner, createTurn } from '../../../support/agent-records';
import { insertResidency } from '../../../support/agent-grants';

const START = 'a'.repeat(40);
const END = 'b'.repeat(40);

describe('patch upload over the host API', () => {
  let t: TestDatabase;
  let api: TestApi;
  let hostA: { hostId: string; credential: string };
  let hostB: { hostId: string; credential: string };
  let jobId: string;
  let clientA: HostApiClient;

  before(async () => {
    t = await freshDatabase();
    api = await startTestApi({ db: t.db, env: { AGENT_PATCH_MAX_KIB: '1' } });
    hostA = await enrollHost(t.db, 'host-a');
    hostB = await enrollHost(t.db, 'host-b');
    jobId = await createJob(t.db, (await createOwner(t.db)).userId);
    clientA = new HostApiClient({ apiUrl: api.url, hostId: 'host-a', credential: hostA.credential });
  });
  after(async () => {
    await api.close();
    await t.drop();
  });

  interface Row { turn_id: string; attempt_id: string; capture_state: string; start_tree: string | null; end_tree: string | null; bytes: string | null; patch: Buffer | null; publish_state: string }
  const rows = () => t.db('agent_turn_patches').orderBy('turn_seq').select<Row[]>('turn_id', 'attempt_id', 'capture_state', 'start_tree', 'end_tree', 'bytes', 'patch', 'publish_state');
  const captured = (patch: string) => ({ status: 'captured' as const, start_tree: START, end_tree: END, bytes: Buffer.byteLength(patch), patch_base64: Buffer.from(patch).toString('base64') });
  const post = (hostId: string, attemptId: string, credential: string, body: unknown) => fetch(`${api.url}/v1/agent/hosts/${hostId}/attempts/${attemptId}/patch`, {
    method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${credential}` }, body: typeof body === 'string' ? body : JSON.stringify(body),
  });

  it('stores the running attempt\'s patch once: a repeated upload changes nothing', async () => {
    const turnId = await createTurn(t.db, jobId, 1);
    const attemptId = await createAttempt(t.db, { jobId, turnId, hostId: 'host-a' });
    assert.deepEqual(await clientA.uploadPatch(attemptId, captured('diff one\n')), { turn_id: turnId, stored: true, publish_state: 'pending' });
    assert.deepEqual(await clientA.uploadPatch(attemptId, captured('a replacement\n')), { turn_id: turnId, stored: false, publish_state: 'pending' });
    const [row] = await rows();
    assert.ok(row);
    assert.equal(row.attempt_id, attemptId);
    assert.equal(String(row.patch), 'diff one\n');
    assert.deepEqual([row.capture_state, row.start_tree, row.end_tree, Number(row.bytes)], ['captured', START, END, 9]);
    await t.db('agent_attempts').where({ attempt_id: attemptId }).update({ state: 'completed' });
    await t.db('agent_turns').where({ turn_id: turnId }).update({ state: 'completed' });
  });

  it('refuses a stale attempt (finished, superseded, or another host\'s) with 409 and stores nothing', async () => {
    const turnId = await createTurn(t.db, jobId, 2);
    const finished = await createAttempt(t.db, { jobId, turnId, hostId: 'host-a', state: 'completed' });
    await assert.rejects(clientA.uploadPatch(finished, captured('late\n')), AttemptNotCurrentError);
    // Superseded: the host lost it (abandoned) and the turn moved to a newer attempt on another host.
    const older = await createAttempt(t.db, { jobId, turnId, hostId: 'host-a', state: 'abandoned' });
    const current = await createAttempt(t.db, { jobId, turnId, hostId: 'host-b' });
    await assert.rejects(clientA.uploadPatch(older, captured('stale\n')), AttemptNotCurrentError);
    const res = await post('host-a', current, hostA.credential, captured('not mine\n'));
    assert.equal(res.status, 409, 'host A names host B\'s attempt');
    assert.equal((await post('host-b', current, hostA.credential, captured('x\n'))).status, 401, 'host A\'s credential on host B\'s path');
    assert.equal((await rows()).length, 1, 'only the first test\'s row');
    const ok = await post('host-b', current, hostB.credential, captured('mine\n'));
    assert.equal(ok.status, 200);
  });

  it('bad input is a clear 4xx and stores nothing: forged tree ids, a lying size, an oversized body, an empty patch with moved trees', async () => {
    const turnId = await createTurn(t.db, jobId, 3);
    const attemptId = await createAttempt(t.db, { jobId, turnId, hostId: 'host-a' });
    const cases: Array<[unknown, number, RegExp]> = [
      [{ ...captured('x\n'), start_tree: 'HEAD' }, 400, /start_tree/],
      [{ ...captured('x\n'), end_tree: 'B'.repeat(40) }, 400, /end_tree/],
      [{ ...captured('x\n'), bytes: 1 }, 400, /bytes/],
      [{ ...captured(''), bytes: 0 }, 400, /empty patch/],
      [{ ...captured('x'.repeat(2000)) }, 413, /larger/],
      [{ status: 'captured' }, 400, /start_tree/],
      [{ status: 'failed', error: 'bad\u0000text' }, 400, /NUL/],
      ['{not json', 400, /JSON/],
    ];
    for (const [body, status, message] of cases) {
      const res = await post('host-a', attemptId, hostA.credential, body);
      const text = await res.text();
      assert.equal(res.status, status, `${JSON.stringify(body).slice(0, 80)} → ${text}`);
      assert.match(text, message);
    }
    assert.equal(await t.db('agent_turn_patches').where({ turn_id: turnId }).first(), undefined);
    const tooLarge = await clientA.uploadPatch(attemptId, { status: 'too_large', start_tree: START, end_tree: END, bytes: 5_000_000 });
    assert.deepEqual(tooLarge, { turn_id: turnId, stored: true, publish_state: 'none' });
    const told = await t.db('agent_events').where({ job_id: jobId, event_type: 'publish_failed', turn_seq: 3 }).select<Array<{ payload: { reason: string; message: string }; is_error: boolean }>>('payload', 'is_error');
    assert.equal(told.length, 1, 'the owner is told once');
    assert.equal(told[0]?.is_error, true);
    assert.equal(told[0]?.payload.reason, 'patch_too_large');
    assert.match(told[0]?.payload.message ?? '', /4\.8 MiB of diff\) are larger than the 1 KiB that can be published/);
  });

  it('the tool-relay credentials (mcp_…, amr.…) cannot upload a patch: 401 and nothing stored; the host credential can', async () => {
    const ownerId = (await t.db('agent_jobs').where({ job_id: jobId }).first<{ owner_id: string }>('owner_id')).owner_id;
    const residency = await insertResidency(t.db, { ownerId: Number(ownerId), model: 'test-model', hostId: 'host-relay' });
    await t.db('agent_sandbox_members').insert({ job_id: residency.jobId, group_id: residency.groupId, uid: 1001 });
    const client = new HostApiClient({ apiUrl: api.url, hostId: 'host-relay', credential: residency.hostCredential });
    const tools = await client.toolCredentials(residency.attemptId);
    for (const credential of [tools.mcp_token, tools.residency_credential]) {
      const res = await post('host-relay', residency.attemptId, credential, captured('replacement\n'));
      assert.equal(res.status, 401, credential.slice(0, 4));
    }
    assert.equal(await t.db('agent_turn_patches').where({ turn_id: residency.turnId }).first(), undefined);
    assert.equal((await client.uploadPatch(residency.attemptId, captured('the host\'s\n'))).stored, true);
  });

  it('a failed capture is stored with its reason and nothing to publish', async () => {
    const turnId = await createTurn(t.db, jobId, 4);
    const attemptId = await createAttempt(t.db, { jobId, turnId, hostId: 'host-a' });
    assert.equal((await clientA.uploadPatch(attemptId, { status: 'failed', error: 'The workspace could not be snapshotted: not a git repository' })).publish_state, 'none');
    const row = await t.db('agent_turn_patches').where({ turn_id: turnId }).first<{ capture_state: string; capture_error: string } | undefined>('capture_state', 'capture_error');
    assert.deepEqual(row, { capture_state: 'failed', capture_error: 'The workspace could not be snapshotted: not a git repository' });
    const told = await t.db('agent_events').where({ job_id: jobId, event_type: 'publish_failed', turn_seq: 4 }).first<{ payload: { reason: string; message: string } }>('payload');
    assert.deepEqual(told?.payload, { reason: 'capture_failed', message: "The turn's changes could not be captured, so nothing was pushed: The workspace could not be snapshotted: not a git repository" });
  });
});
