/**
 * The owner API on its own (real PostgreSQL): a turn accepted while Temporal is unreachable is
 * durable (201, queued) and the reconciler later starts its chat workflow on the real Temporal
 * server; a configured source-control app that cannot be loaded refuses repository jobs with 503.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { reconcileQueuedTurns } from '../../activities/control/chat-reconciler';
import { ChatDelivery } from '../../agent/jobs/chat-delivery';
import { loadSettings } from '../../lib/settings';
import { chatWorkflowId } from '../../workflows/definitions/chat';
import { searchAttributes } from '../../workflows/definitions/search-attributes';
import { postJson } from '../support/accounts';
import { createOwner } from '../support/agent-records';
import { startTestApi, type TestApi } from '../support/api';
import { freshDatabase, type TestDatabase } from '../support/db';
import { captureLogs } from '../support/logs';
import { temporalEnv, uniqueTaskQueue } from '../support/temporal';

describe('agent owner API without a reachable Temporal, and the source-control app gate', function () {
  this.timeout(60_000);
  let t: TestDatabase;
  let key: string;
  const dir = mkdtempSync(join(tmpdir(), 'scm-app-'));

  before(async () => {
    t = await freshDatabase();
    key = (await createOwner(t.db)).apiKey;
  });
  after(async () => {
    await t.drop();
  });

  async function withApi<T>(env: Record<string, string>, fn: (api: TestApi) => Promise<T>): Promise<T> {
    const api = await startTestApi({ db: t.db, env: { TEMPORAL_CALL_TIMEOUT_SECONDS: '1', ...env } });
    try {
      return await fn(api);
    } finally {
      await api.close();
    }
  }
  const createJob = (api: TestApi, body: Record<string, unknown>) =>
    postJson(`${api.url}/v1/agent/jobs`, { prompt: 'do it', model: 'm', ...body }, { authorization: `Bearer ${key}` });

  it('keeps a turn submitted while Temporal is down, and the reconciler starts its chat workflow later', async () => {
    const controlQueue = uniqueTaskQueue('control');
    const jobId = await withApi({ TEMPORAL_CONTROL_TASK_QUEUE: controlQueue }, async (api) => {
      const res = await createJob(api, { repo: null });
      assert.equal(res.status, 201, await res.clone().text());
      return ((await res.json()) as { job_id: string }).job_id;
    });
    const turn = await t.db('agent_turns').where({ job_id: jobId }).first<{ state: string }>('state');
    assert.equal(turn.state, 'queued', 'the turn is durable although no workflow heard of it');

    const env = await temporalEnv();
    const settings = loadSettings({ TEMPORAL_CONTROL_TASK_QUEUE: controlQueue });
    const delivery = new ChatDelivery(env.client, settings, captureLogs('reconciler').log);
    const woken = await reconcileQueuedTurns({ db: t.db, delivery, log: captureLogs('reconciler').log, minQueuedSeconds: 0 });
    assert.equal(woken, 1);
    const handle = env.client.workflow.getHandle(chatWorkflowId(jobId));
    const described = await handle.describe();
    assert.equal(described.status.name, 'RUNNING');
    assert.equal(described.taskQueue, controlQueue);
    assert.equal(described.typedSearchAttributes.get(searchAttributes.profile), 'untrusted-vm-v1', 'operators filter chats by AgentProfile in the Temporal UI');
    await handle.terminate('test done');
  });

  it('chooses the execution profile: trusted-v1 only for reviewed repositories, refused with 403 elsewhere and nothing written', async () => {
    const jobs = async () => Number((await t.db('agent_jobs').count<Array<{ count: string }>>({ count: '*' }))[0]!.count);
    const profileOf = async (res: Response) => {
      assert.equal(res.status, 201, await res.clone().text());
      const jobId = ((await res.json()) as { job_id: string }).job_id;
      return (await t.db('agent_jobs').where({ job_id: jobId }).first<{ execution_profile: string }>('execution_profile'))?.execution_profile;
    };
    const env = { AGENT_REPO_ALLOWLIST: 'acme/app,acme/reviewed', AGENT_TRUSTED_REPOSITORIES: 'acme/reviewed' };
    await withApi(env, async (api) => {
      const before = await jobs();
      for (const body of [{ repo: 'acme/app', execution_profile: 'trusted-v1' }, { repo: null, execution_profile: 'trusted-v1' }]) {
        const res = await createJob(api, body);
        assert.equal(res.status, 403, JSON.stringify(body));
        const error = ((await res.json()) as { error: { message: string; param: string } }).error;
        assert.equal(error.param, 'execution_profile');
        assert.match(error.message, /trusted-v1/);
      }
      const invalid = await createJob(api, { repo: null, execution_profile: 'root-v0' });
      assert.equal(invalid.status, 400);
      const noRepo = await postJson(`${api.url}/v1/agent/jobs`, { prompt: 'do it', model: 'm' }, { authorization: `Bearer ${key}` });
      assert.equal(noRepo.status, 400);
      const noRepoError = ((await noRepo.json()) as { error: { message: string; param: string } }).error;
      assert.equal(noRepoError.param, 'repo');
      assert.equal(noRepoError.message, "Invalid field 'repo': is required: the repository to work on, or null for a temporary workspace");
      assert.equal(await jobs(), before, 'a refused job writes nothing');
      assert.equal(await profileOf(await createJob(api, { repo: 'acme/reviewed', execution_profile: 'trusted-v1' })), 'trusted-v1');
      assert.equal(await profileOf(await createJob(api, { repo: 'acme/reviewed' })), 'untrusted-vm-v1', 'reviewed, but the deployment default is the safe one');
      assert.equal(await profileOf(await createJob(api, { repo: 'acme/reviewed', execution_profile: 'untrusted-vm-v1' })), 'untrusted-vm-v1');
    });
    await withApi({ ...env, AGENT_DEFAULT_EXECUTION_PROFILE: 'trusted-v1' }, async (api) => {
      assert.equal(await profileOf(await createJob(api, { repo: 'acme/reviewed' })), 'trusted-v1', 'the default applies to reviewed repositories');
      assert.equal(await profileOf(await createJob(api, { repo: 'acme/app' })), 'untrusted-vm-v1', 'and never to the others');
      assert.equal(await profileOf(await createJob(api, { repo: null })), 'untrusted-vm-v1', 'nor to a temporary workspace');
    });
  });

  it('answers 503 for repository jobs while a configured source-control app cannot be loaded', async () => {
    const missing = { AGENT_SOURCE_CONTROL_APP_ID: '42', AGENT_SOURCE_CONTROL_APP_PRIVATE_KEY_PATH: join(dir, 'missing.pem'), AGENT_REPO_ALLOWLIST: 'acme/app' };
    await withApi(missing, async (api) => {
      const refused = await createJob(api, { repo: 'acme/app' });
      assert.equal(refused.status, 503);
      assert.match(await refused.text(), /source-control app/);
      assert.equal((await createJob(api, { repo: null })).status, 201, 'a temporary workspace needs no app');
    });
    const keyPath = join(dir, 'app.pem');
    writeFileSync(keyPath, generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }));
    await withApi({ ...missing, AGENT_SOURCE_CONTROL_APP_PRIVATE_KEY_PATH: keyPath }, async (api) => {
      assert.equal((await createJob(api, { repo: 'acme/app' })).status, 201);
      assert.equal((await createJob(api, { repo: 'acme/other' })).status, 403, 'entitlement still fails closed');
    });
  });
});
