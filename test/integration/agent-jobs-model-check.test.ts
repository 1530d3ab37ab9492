/**
 * Job creation checks the model at once (real PostgreSQL, a real gateway with its registry, the
 * real Temporal server): an unknown model is 404 `model_not_found`, a model above the owner's
 * role is 403, a non-chat model is 400, and a gateway that does not answer is 503, each in the
 * API's error shape and with no job, turn, event or chat workflow created. An alias resolves to
 * the public id the job keeps. Without grant dispatch configured the check is skipped.
 */
import assert from 'node:assert/strict';
import { GatewayGrantClient } from '../../agent/grants/gateway-grant-client';
import { postJson } from '../support/accounts';
import { DISPATCH_TOKEN } from '../support/agent-grants';
import { createOwner, type TestOwner } from '../support/agent-records';
import { startTestApi, type TestApi } from '../support/api';
import { freshDatabase, type TestDatabase } from '../support/db';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { temporalEnv, uniqueTaskQueue } from '../support/temporal';
import { waitFor } from '../support/wait';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { unusedLoopbackPort } from '../support/ports';

interface ErrorAnswer {
  error: { message: string; type: string; code: string; param: string | null };
}

describe('agent job creation checks the model first', function () {
  this.timeout(60_000);
  let t: TestDatabase;
  let gw: TestGateway;
  let env: TestWorkflowEnvironment;
  let free: TestOwner;
  const controlQueue = uniqueTaskQueue('control');
  const apis: TestApi[] = [];

  const counts = async () => {
    const [jobs, turns, events] = await Promise.all(['agent_jobs', 'agent_turns', 'agent_events'].map(async (table) =>
      Number((await t.db(table).count<Array<{ count: string }>>('* as count'))[0]!.count)));
    return { jobs, turns, events };
  };
  async function api(grants: GatewayGrantClient | undefined): Promise<TestApi> {
    const started = await startTestApi({
      db: t.db, temporal: env.client, ...(grants ? { grants } : {}),
      env: { TEMPORAL_CONTROL_TASK_QUEUE: controlQueue, TEMPORAL_CALL_TIMEOUT_SECONDS: '1' },
    });
    apis.push(started);
    return started;
  }
  const create = async (target: TestApi, owner: TestOwner, model: string) => {
    const res = await postJson(`${target.url}/v1/agent/jobs`, { prompt: 'do it', model, repo: null }, { authorization: `Bearer ${owner.apiKey}` });
    return { status: res.status, body: (await res.json()) as ErrorAnswer & { job_id?: string } };
  };
  const workflowsOnQueue = async () => {
    const ids: string[] = [];
    for await (const wf of env.client.workflow.list({ query: `TaskQueue = '${controlQueue}'` })) ids.push(wf.workflowId);
    return ids;
  };

  before(async () => {
    t = await freshDatabase();
    env = await temporalEnv();
    gw = await startTestGateway({
      db: t.db,
      modelsYaml: [
        'models:',
        '  - { id: chat, name: Chat, aliases: [chat-latest], provider: generic_compat, base_url: "http://127.0.0.1:9" }',
        '  - { id: pro-chat, name: Pro chat, required_role: pro, provider: generic_compat, base_url: "http://127.0.0.1:9" }',
        '  - { id: emb, name: Emb, model_type: embedding, provider: generic_compat, base_url: "http://127.0.0.1:9" }',
        '',
      ].join('\n'),
      env: { USER_AUTH_ENABLED: 'true', GATEWAY_GRANT_DISPATCH_TOKEN: DISPATCH_TOKEN },
    });
    free = await createOwner(t.db);
    await t.db('users').where({ id: free.userId }).update({ role: 'free' });
  });
  after(async () => {
    for (const id of await workflowsOnQueue().catch(() => [])) await env.client.workflow.getHandle(id).terminate('test done').catch(() => undefined);
    for (const started of apis) await started.close();
    await gw?.close();
    await t?.drop();
  });

  it('refuses an unknown model (404), a model above the owner’s role (403), a non-chat model (400) and an unanswering gateway (503), creating nothing', async () => {
    const checked = await api(new GatewayGrantClient({ gatewayUrl: gw.url, dispatchToken: DISPATCH_TOKEN }));
    const before = await counts();

    const missing = await create(checked, free, 'no-such-model');
    assert.equal(missing.status, 404);
    assert.deepEqual(missing.body, { error: { message: "The model 'no-such-model' does not exist", type: 'not_found_error', code: 'model_not_found', param: 'model' } });

    const forbidden = await create(checked, free, 'pro-chat');
    assert.equal(forbidden.status, 403);
    assert.deepEqual(forbidden.body, { error: { message: "Your account's role may not use the model 'pro-chat'", type: 'permission_error', code: 'forbidden', param: 'model' } });

    const embedding = await create(checked, free, 'emb');
    assert.equal(embedding.status, 400);
    assert.equal(embedding.body.error.param, 'model');

    const silent = await api(new GatewayGrantClient({ gatewayUrl: `http://127.0.0.1:${await unusedLoopbackPort()}`, dispatchToken: DISPATCH_TOKEN }));
    const down = await create(silent, free, 'chat');
    assert.equal(down.status, 503);
    assert.equal(down.body.error.code, 'service_unavailable');
    assert.match(down.body.error.message, /^The model could not be checked because the gateway did not answer; nothing was created/);
    assert.doesNotMatch(JSON.stringify(down.body), /ECONNREFUSED|fetch failed|127\.0\.0\.1/, 'no raw error text of the failed call');

    assert.deepEqual(await counts(), before, 'no job, turn or event was written');

    // The same owner's job on a model it may use is accepted and starts its chat workflow: the only one on the queue.
    const accepted = await create(checked, free, 'chat');
    assert.equal(accepted.status, 201, JSON.stringify(accepted.body));
    const ids = await waitFor(async () => {
      const listed = await workflowsOnQueue();
      return listed.length > 0 ? listed : undefined;
    }, 'the accepted job’s chat workflow to be listed');
    assert.deepEqual(ids, [`chat:${accepted.body.job_id}`], 'no chat workflow was started for a refused job');
  });

  it('stores the public id of an alias, and follows the owner’s current role', async () => {
    const checked = await api(new GatewayGrantClient({ gatewayUrl: gw.url, dispatchToken: DISPATCH_TOKEN }));
    const aliased = await create(checked, free, 'chat-latest');
    assert.equal(aliased.status, 201, JSON.stringify(aliased.body));
    const job = await t.db('agent_jobs').where({ job_id: aliased.body.job_id }).first<{ model: string }>('model');
    assert.equal(job?.model, 'chat');

    await t.db('users').where({ id: free.userId }).update({ role: 'pro' });
    try {
      assert.equal((await create(checked, free, 'pro-chat')).status, 201, 'a pro owner may use the pro model');
    } finally {
      await t.db('users').where({ id: free.userId }).update({ role: 'free' });
    }
  });

  it('skips the check when the API has no grant dispatch configured (the turn then fails with its own message)', async () => {
    const unchecked = await api(undefined);
    const res = await create(unchecked, free, 'no-such-model');
    assert.equal(res.status, 201, JSON.stringify(res.body));
  });
});
