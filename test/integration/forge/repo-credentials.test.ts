/**
 * Repository credentials on the host (docs/forges.md "Credentials on the host"), with a real API,
 * PostgreSQL, Docker and Gitea: the host runner asks the API for the clone credential of the
 * attempt it prepares; the API mints it through the Gitea adapter only for the attempt leased to
 * that host; a PRIVATE repository is cloned into a real sandbox with it, and the credential is
 * nowhere afterwards (`.git/config`, `git config --list --show-origin`, any file of the checkout,
 * the environment of the agent's process or of any process in the container). With repo tokens
 * issued, the agent's environment has `SCM_TOKEN`, which reaches the job's repository only.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { AttemptNotCurrentError, HostApiClient } from '../../../activities/agent/host-api-client';
import { DockerSandbox } from '../../../activities/docker/docker-sandbox';
import { execInContainer } from '../../../activities/docker/container-exec';
import { GiteaForge } from '../../../activities/forge/gitea-forge';
import { repoCredentialsOf } from '../../../activities/forge/forges';
import { createSandboxActivities, type PrepareSandboxInput, type PrepareSandboxResult } from '../../../activities/sandbox-activities';
import { enrollHost } from '../../../agent/hosts/host-registry';
import { AppError } from '../../../lib/errors';
import { createAttempt, createTurn } from '../../support/agent-records';
import { insertOwner, insertResidency } from '../../support/agent-grants';
import { startTestApi, type TestApi } from '../../support/api';
import { freshDatabase, type TestDatabase } from '../../support/db';
import { docker, removeContainers, SANDBOX_IMAGE, TEST_DISK_ROOT, TEST_RUNTIMES, testLabels, testRunId } from '../../support/docker';
import { createGiteaRepo, createGiteaUser, testGitea } from '../../support/gitea';
import { gitWithHeader } from '../../support/git-http';

const noop = () => undefined;
const quiet = { log: noop, trace: noop, debug: noop, info: noop, warn: noop, error: noop };
const run = { timeoutMs: 30_000, maxOutputBytes: 256 * 1024 };

describe('repository credentials on the host (API + Gitea + Docker)', function () {
  this.timeout(180_000);
  let t: TestDatabase;
  let api: TestApi;
  let noScm: TestApi;
  let work: string;
  let host: { hostId: string; credential: string };
  let other: { hostId: string; credential: string };
  let repoUrl: string;
  let otherRepoUrl: string;
  let jobId: string;
  let attemptId: string;

  before(async () => {
    t = await freshDatabase();
    const gitea = await testGitea();
    const owner = await createGiteaUser();
    const repo = await createGiteaRepo(owner.username, undefined, { private: true });
    const otherRepo = await createGiteaRepo(owner.username, undefined, { private: true });
    repoUrl = `${gitea.url}/${repo.owner}/${repo.name}`;
    otherRepoUrl = `${gitea.url}/${otherRepo.owner}/${otherRepo.name}`;
    const forges = [new GiteaForge({ baseUrl: gitea.url, admin: gitea.admin })];
    api = await startTestApi({ db: t.db, repoCredentials: repoCredentialsOf(forges, { repoTokens: true }) });
    noScm = await startTestApi({ db: t.db, repoCredentials: repoCredentialsOf(forges, { repoTokens: false }) });
    // A running attempt with its sandbox member (what the attempt context needs), on a job of the private repository.
    const ownerId = await insertOwner(t.db, `forge-${process.pid}@example.test`);
    const residency = await insertResidency(t.db, { ownerId, model: 'm', hostId: `forge-host-${process.pid}` });
    await t.db('agent_sandbox_members').insert({ job_id: residency.jobId, group_id: residency.groupId, uid: 1001 });
    await t.db('agent_jobs').where({ job_id: residency.jobId }).update({ repo: repoUrl });
    ({ jobId, attemptId } = residency);
    host = { hostId: residency.hostId, credential: residency.hostCredential };
    other = await enrollHost(t.db, `forge-other-${process.pid}`);
    work = await mkdtemp(join(tmpdir(), 'repo-credentials-'));
  });
  after(async () => {
    await removeContainers();
    await api?.close();
    await noScm?.close();
    await t?.drop();
    await rm(work, { recursive: true, force: true });
  });

  it('mints a clone credential only for the attempt leased to the asking host', async () => {
    const mine = new HostApiClient({ apiUrl: api.url, hostId: host.hostId, credential: host.credential });
    const token = await mine.cloneCredential(attemptId);
    assert.ok(token, 'a private repository on a configured forge gets a credential');
    const header = `Basic ${Buffer.from(`x-access-token:${token}`).toString('base64')}`;
    await gitWithHeader(work, ['ls-remote', `${repoUrl}.git`], header);
    await assert.rejects(gitWithHeader(work, ['ls-remote', `${otherRepoUrl}.git`], header), 'the clone credential reaches the job repository only');

    const stranger = new HostApiClient({ apiUrl: api.url, hostId: other.hostId, credential: other.credential });
    await assert.rejects(stranger.cloneCredential(attemptId), AttemptNotCurrentError);
    const ended = await createAttempt(t.db, { jobId, turnId: await createTurn(t.db, jobId, 2), hostId: host.hostId, state: 'completed' });
    await assert.rejects(mine.cloneCredential(ended), AttemptNotCurrentError);
    await assert.rejects(mine.cloneCredential('att_doesnotexist'), AttemptNotCurrentError);
    const bare = await fetch(`${api.url}/v1/agent/hosts/${host.hostId}/attempts/${attemptId}/clone-credential`, { method: 'POST' });
    assert.equal(bare.status, 401, 'no host credential, no clone credential');
  });

  it('clones a private repository into a real sandbox and leaves the credential nowhere in it', async () => {
    const client = new HostApiClient({ apiUrl: api.url, hostId: host.hostId, credential: host.credential });
    const minted: string[] = [];
    const activities = createSandboxActivities({
      docker: docker(), hostId: host.hostId, image: SANDBOX_IMAGE, sandboxDiskDir: TEST_DISK_ROOT, limits: { memoryBytes: 512 * 1024 * 1024, nanoCpus: 1e9 },
      sandboxLabels: testLabels(), runtimes: TEST_RUNTIMES,
      cloneCredential: async ({ attemptId: asked }) => {
        const token = await client.cloneCredential(asked);
        if (token) minted.push(token);
        return token;
      },
    });
    const input: PrepareSandboxInput = { jobId, groupId: `grp-${testRunId}-forge`, generation: 1, attemptId, uid: 1001, repo: repoUrl };
    const prepared = await new MockActivityEnvironment(undefined, { logger: quiet }).run<[PrepareSandboxInput], PrepareSandboxResult, typeof activities.prepareSandbox>((i) => activities.prepareSandbox(i), input);
    const [token] = minted;
    assert.ok(token && minted.length === 1, 'the runner asked the API once for the attempt being prepared');

    const member = new DockerSandbox(docker(), prepared.containerName, 1001);
    assert.match(await member.readFile('README.md', 10_000), /^# /, 'the private repository was cloned');
    const config = await member.readFile('.git/config', 100_000);
    assert.ok(!config.includes(token) && !/extraheader|authorization|credential/i.test(config), config);
    const listed = await member.exec(['git', 'config', '--list', '--show-origin'], run);
    assert.equal(listed.exitCode, 0, listed.stderr);
    assert.ok(!listed.stdout.includes(token) && !/extraheader|credential\.helper/i.test(listed.stdout), listed.stdout);
    const grep = await member.exec(['grep', '-rlF', token, '/workspace', '/home'], run);
    assert.equal(grep.stdout.trim(), '', 'no file of the checkout or the member home holds the credential');

    // The agent's process, started the way the runner starts it: with the attempt context's environment.
    const context = await client.attemptContext(attemptId);
    const scmToken = context.env.SCM_TOKEN;
    assert.ok(scmToken && scmToken !== token, 'repo tokens are issued: SCM_TOKEN is the agent\'s own, not the clone credential');
    const agent = await member.exec(['sh', '-c', 'tr "\\0" "\\n" < /proc/$$/environ; echo; for f in /proc/[0-9]*/environ; do tr "\\0" "\\n" < "$f" 2>/dev/null; done'], { ...run, env: context.env });
    assert.ok(agent.stdout.includes(`SCM_TOKEN=${scmToken}`), 'the scan sees the agent\'s environment');
    assert.ok(!agent.stdout.includes(token), 'the clone credential is in no process environment of the sandbox');
    const root = await execInContainer(docker(), prepared.containerName, { cmd: ['sh', '-c', 'for f in /proc/[0-9]*/environ; do tr "\\0" "\\n" < "$f"; done'], user: '0' });
    assert.ok(!root.stdout.includes(token));
  });

  it('gives SCM_TOKEN write on the job repository only, and none without repo tokens', async () => {
    const context = await new HostApiClient({ apiUrl: api.url, hostId: host.hostId, credential: host.credential }).attemptContext(attemptId);
    const header = `Basic ${Buffer.from(`x-access-token:${context.env.SCM_TOKEN}`).toString('base64')}`;
    const dir = join(work, 'scm');
    await gitWithHeader(work, ['clone', '-q', `${repoUrl}.git`, dir], header);
    await gitWithHeader(dir, ['commit', '-q', '--allow-empty', '-m', 'pushed with SCM_TOKEN']);
    await gitWithHeader(dir, ['push', '-q', 'origin', 'HEAD:refs/heads/agent-scm-token'], header);
    await assert.rejects(gitWithHeader(work, ['ls-remote', `${otherRepoUrl}.git`], header), 'SCM_TOKEN reaches the job repository only');

    const without = await new HostApiClient({ apiUrl: noScm.url, hostId: host.hostId, credential: host.credential }).attemptContext(attemptId);
    assert.equal(without.env.SCM_TOKEN, undefined);
  });

  it('runs the turn without SCM_TOKEN, logged, when the forge cannot mint it; a stale attempt still gets 409', async () => {
    const failing = await startTestApi({
      db: t.db,
      repoCredentials: { cloneToken: () => Promise.resolve(undefined), repoToken: () => Promise.reject(new AppError('service_unavailable', 'The repository\'s forge is unavailable: Gitea did not answer')) },
    });
    try {
      const client = new HostApiClient({ apiUrl: failing.url, hostId: host.hostId, credential: host.credential });
      const context = await client.attemptContext(attemptId);
      assert.equal(context.env.SCM_TOKEN, undefined);
      assert.equal(context.attempt_id, attemptId);
      assert.ok(failing.logs.lines.some((l) => l.event === 'agent_scm_token_unavailable' && l.attempt_id === attemptId), JSON.stringify(failing.logs.lines));
      const stale = new HostApiClient({ apiUrl: failing.url, hostId: other.hostId, credential: other.credential });
      await assert.rejects(stale.attemptContext(attemptId), AttemptNotCurrentError);
    } finally {
      await failing.close();
    }
  });
});
