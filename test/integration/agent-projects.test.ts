/**
 * The owner's chats grouped by repository (`GET /v1/agent/projects`) and the `temporary` filter
 * of the three list routes, through the real API on a fresh PostgreSQL database: repo-less chats
 * form one `repo: null` group, soft-deleted chats and other owners' chats are never counted, and
 * `temporary=true` with `repo` is a 400 on `/jobs`, `/conversations` and `/sessions` alike.
 */
import assert from 'node:assert/strict';
import { newId } from '../../agent/jobs/job-store';
import { createOwner, type TestOwner } from '../support/agent-records';
import { startTestApi, type TestApi } from '../support/api';
import { freshDatabase, type TestDatabase } from '../support/db';

const LISTS = ['/v1/agent/jobs', '/v1/agent/conversations', '/v1/agent/sessions'];

describe('owner project list and the temporary filter (API + PostgreSQL)', function () {
  this.timeout(60_000);
  let t: TestDatabase;
  let api: TestApi;
  let owner: TestOwner;
  let other: TestOwner;
  const jobs: Record<string, string> = {};

  /** A chat of `ownerId` on `repo` (null: temporary) last active at `activity`. */
  async function chat(ownerId: number, repo: string | null, activity: string, deleted = false): Promise<string> {
    const jobId = newId('job');
    await t.db('agent_jobs').insert({
      job_id: jobId, owner_id: ownerId, title: 'chat', model: 'm', repo,
      created_at: activity, updated_at: activity, deleted_at: deleted ? activity : null,
    });
    return jobId;
  }

  async function get(path: string, key = owner.apiKey): Promise<{ status: number; body: Record<string, unknown> }> {
    const res = await fetch(`${api.url}${path}`, { headers: { authorization: `Bearer ${key}` } });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  }

  before(async () => {
    t = await freshDatabase();
    api = await startTestApi({ db: t.db });
    owner = await createOwner(t.db);
    other = await createOwner(t.db);
    jobs.app1 = await chat(owner.userId, 'acme/app', '2026-01-01T10:00:00Z');
    jobs.app2 = await chat(owner.userId, 'acme/app', '2026-01-03T10:00:00Z');
    jobs.lib = await chat(owner.userId, 'acme/lib', '2026-01-02T10:00:00Z');
    jobs.temp1 = await chat(owner.userId, null, '2026-01-01T12:00:00Z');
    jobs.temp2 = await chat(owner.userId, null, '2026-01-02T12:00:00Z');
    jobs.deletedTemp = await chat(owner.userId, null, '2026-01-09T10:00:00Z', true);
    jobs.deletedTool = await chat(owner.userId, 'acme/tool', '2026-01-09T10:00:00Z', true);
    jobs.otherApp = await chat(other.userId, 'acme/app', '2026-01-08T10:00:00Z');
    jobs.otherTemp = await chat(other.userId, null, '2026-01-08T10:00:00Z');
  });
  after(async () => {
    await api?.close();
    await t?.drop();
  });

  it('groups the owner\'s chats by repository with a repo: null group for temporary chats', async () => {
    const res = await get('/v1/agent/projects');
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body.projects, [
      { repo: 'acme/app', temporary: false, chats: 2, last_activity_at: '2026-01-03T10:00:00.000Z' },
      { repo: null, temporary: true, chats: 2, last_activity_at: '2026-01-02T12:00:00.000Z' },
      { repo: 'acme/lib', temporary: false, chats: 1, last_activity_at: '2026-01-02T10:00:00.000Z' },
    ], 'deleted chats (acme/tool, a later temporary one) and the other owner\'s chats are not counted');
  });

  it('counts only the caller\'s own chats for another owner', async () => {
    const res = await get('/v1/agent/projects', other.apiKey);
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.projects, [
      { repo: 'acme/app', temporary: false, chats: 1, last_activity_at: '2026-01-08T10:00:00.000Z' },
      { repo: null, temporary: true, chats: 1, last_activity_at: '2026-01-08T10:00:00.000Z' },
    ], 'equal activity: the repository first, the temporary group last');
  });

  it('answers an owner without chats with no groups, refuses unknown parameters and anonymous callers', async () => {
    const fresh = await createOwner(t.db);
    assert.deepEqual((await get('/v1/agent/projects', fresh.apiKey)).body, { projects: [] });
    const unknown = await get('/v1/agent/projects?repo=acme/app');
    assert.equal(unknown.status, 400);
    assert.match(JSON.stringify(unknown.body), /repo/);
    assert.equal((await fetch(`${api.url}/v1/agent/projects`)).status, 401);
  });

  for (const list of LISTS) {
    it(`${list}: temporary=true lists only the owner's repo-less chats, temporary=false only the others`, async () => {
      const temporary = await get(`${list}?temporary=true`);
      assert.equal(temporary.status, 200);
      const tempJobs = temporary.body.jobs as Array<{ job_id: string; repo: string | null; temporary: boolean }>;
      assert.deepEqual(tempJobs.map((j) => j.job_id), [jobs.temp2, jobs.temp1]);
      assert.ok(tempJobs.every((j) => j.repo === null && j.temporary));
      const withRepo = await get(`${list}?temporary=false`);
      assert.deepEqual((withRepo.body.jobs as Array<{ job_id: string }>).map((j) => j.job_id), [jobs.app2, jobs.lib, jobs.app1]);
    });

    it(`${list}: temporary=true combined with repo is a 400 naming repo`, async () => {
      const res = await get(`${list}?temporary=true&repo=acme/app`);
      assert.equal(res.status, 400, JSON.stringify(res.body));
      const error = res.body.error as { message: string; param?: string };
      assert.match(error.message, /repo.*cannot be combined with temporary=true/);
      const repoOnly = await get(`${list}?repo=acme/app`);
      assert.deepEqual((repoOnly.body.jobs as Array<{ job_id: string }>).map((j) => j.job_id), [jobs.app2, jobs.app1]);
    });
  }
});
