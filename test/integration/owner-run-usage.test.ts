/**
 * `GET /v1/agent/usage/runs` (docs/agent-api.md "Run usage") over the real stack: turns run by the
 * agent through the gateway (grants, the fake upstream's token counts, the gateway's pricing and its
 * request log writing `api_logs`) are counted for today under the chat's model; older days come from
 * rows built and written by the request log's own row builder and PostgreSQL sink. What is not a
 * run (the owner's own API-key calls, a prompt rewrite) and another owner's runs are left out;
 * every day of the window is present; `days` other than 7 or 30 is a 400.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { buildBatch } from '../../gateway/request-log/batch';
import { requestRecord } from '../support/request-log-fakes';
import { postgresSink } from '../../gateway/request-log/postgres-sink';
import { AGENT_MODEL, makeOwner, ownerCall, startAgentStack, type AgentStack } from '../support/agent-stack';
import { waitFor } from '../support/wait';

interface Counts { turns: number; requests: number; input_tokens: number; output_tokens: number; cost_usd: number }
interface Usage extends Counts {
  days: number; from: string; to: string;
  daily: Array<Counts & { day: string; models: Array<Counts & { model: string }> }>;
  models: Array<Counts & { model: string }>;
  totals: Counts;
}

const DAY_MS = 86_400_000;
/** USD per 1M tokens of the stack's model. */
const PRICE = { prompt: '2', completion: '10' };
/** The fake upstream's usage of every answer: 12 prompt, 5 completion tokens → 12 × 2 + 5 × 10 µUSD. */
const PER_REQUEST = { input: 12, output: 5, cost: 74e-6 };

const dateOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const zero = { turns: 0, requests: 0, input_tokens: 0, output_tokens: 0, cost_usd: 0 };

describe('owner run usage by day and model (gateway request log, agent turns, PostgreSQL)', function () {
  this.timeout(180_000);
  let stack: AgentStack;
  let ownerId: number;
  let otherKey: string;
  let otherId: number;

  before(async () => {
    stack = await startAgentStack({ pricing: PRICE });
    const email = `owner-${stack.hostId}@example.com`;
    ownerId = Number((await stack.t.db('users').where({ email }).first<{ id: string }>('id')).id);
    otherKey = await makeOwner(stack.gateway.url, stack.t, `other-${stack.hostId}@example.com`);
    otherId = Number((await stack.t.db('users').where({ email: `other-${stack.hostId}@example.com` }).first<{ id: string }>('id')).id);
  });
  after(async () => {
    await stack?.close();
  });

  const usage = async (query = '', key = stack.ownerKey) => {
    const res = await ownerCall(stack, 'GET', `/v1/agent/usage/runs${query}`, undefined, key);
    return { status: res.status, body: (await res.json()) as Usage & { error?: { param?: string } } };
  };
  const turnStates = async (jobId: string) => (await stack.t.db('agent_turns').where({ job_id: jobId }).orderBy('seq').pluck('state')) as string[];
  const grantRows = (userId: number) => stack.t.db('api_logs').where({ user_id: userId }).whereRaw(`metadata->>'via' = 'agent_grant'`).count<Array<{ count: string }>>('* as count').then((r) => Number(r[0]!.count));

  /** A chat of the key's owner whose turns all completed; one inference request per scripted answer. */
  async function runChat(key: string, prompts: string[], beforeTurn: (seq: number) => void = () => undefined): Promise<string> {
    beforeTurn(1);
    const res = await ownerCall(stack, 'POST', '/v1/agent/jobs', { prompt: prompts[0], model: AGENT_MODEL, repo: null }, key);
    assert.equal(res.status, 201, await res.clone().text());
    const jobId = ((await res.json()) as { job_id: string }).job_id;
    await waitFor(async () => (await turnStates(jobId))[0] === 'completed', 'turn 1 completed', 90_000);
    for (let seq = 2; seq <= prompts.length; seq++) {
      beforeTurn(seq);
      assert.equal((await ownerCall(stack, 'POST', `/v1/agent/jobs/${jobId}/turns`, { prompt: prompts[seq - 1] }, key)).status, 201);
      await waitFor(async () => (await turnStates(jobId))[seq - 1] === 'completed', `turn ${seq} completed`, 90_000);
    }
    return jobId;
  }

  /** A past run of the owner on `model`: its chat, a turn started at `at` and its grant, and `requests` request-log rows at `at` written as the gateway writes them. */
  async function pastRun(at: number, model: string, requests: Array<{ input: number; output: number }>): Promise<void> {
    const jobId = `job_${randomUUID().replace(/-/g, '').slice(0, 20)}`;
    const attemptId = `att_${randomUUID().replace(/-/g, '').slice(0, 20)}`;
    await stack.t.db('agent_jobs').insert({ job_id: jobId, owner_id: ownerId, title: 'past', model, created_at: new Date(at), deleted_at: new Date() });
    await stack.t.db('agent_turns').insert({ turn_id: `turn_${attemptId}`, job_id: jobId, seq: 1, prompt: 'p', state: 'completed', attempt_id: attemptId, started_at: new Date(at), finished_at: new Date(at + 1000) });
    await stack.t.db('agent_grants').insert({
      grant_id: `grant_${attemptId}`, token_hash: randomUUID(), token_prefix: 'agr_past', user_id: ownerId, model, kind: 'turn', job_id: jobId, attempt_id: attemptId, expires_at: new Date(at + 300_000),
    });
    const entries = requests.map((r, i) => requestRecord({
      at: at + i, requestId: `req-${attemptId}-${i}`, path: '/v1/chat/completions', surface: undefined, status: 200, latencyMs: 10, firstTokenMs: undefined,
      errorCode: undefined, caller: { role: 'pro', via: 'agent_grant', userId: ownerId, grantId: `grant_${attemptId}`, grantModel: model }, model, stream: false,
      routing: { provider: 'generic_compat', base_url: 'http://upstream.invalid', endpoint_id: 'ep-past' }, usage: { prompt_tokens: r.input, completion_tokens: r.output },
      pricing: PRICE, client: undefined, numUserTurns: 1, numToolCalls: 0, lastUserMessage: 'p', userAgent: 'agent', sessionId: undefined, synthetic: false, rejection: undefined,
    }));
    await postgresSink(stack.t.db).write(await buildBatch(entries));
  }

  it("counts today's real turns and their inference under the chat's model, older days from the request log, every day present", async () => {
    // Owner: turn 1 one request; turn 2 a tool call, then the answer (two requests).
    await runChat(stack.ownerKey, ['Make a workspace', 'Run a command'], (seq) => {
      if (seq === 2) stack.upstream.enqueue({ kind: 'tool_call', name: 'bash', arguments: { command: 'echo hi' } }, { kind: 'json', content: 'ran it' });
    });
    // Not runs: the owner's own API-key call, and a prompt rewrite (a grant bound to no chat).
    const direct = await fetch(`${stack.gateway.url}/v1/chat/completions`, {
      method: 'POST', headers: { authorization: `Bearer ${stack.ownerKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: AGENT_MODEL, messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.equal(direct.status, 200);
    stack.upstream.enqueue({ kind: 'json', content: JSON.stringify({ prompt: 'Create hello.txt containing hi, then stop.' }) });
    const rewrite = await ownerCall(stack, 'POST', '/v1/agent/prompts/rewrite', { prompt: 'make hello', model: AGENT_MODEL });
    assert.equal(rewrite.status, 200, await rewrite.clone().text());
    // Another owner's run.
    await runChat(otherKey, ['Theirs']);
    await waitFor(async () => (await grantRows(otherId)) === 1, "the other owner's turn request is in the request log", 30_000);
    await waitFor(async () => (await grantRows(ownerId)) === 4, "the owner's grant requests are in the request log (three turns' and the rewrite's)", 30_000);
    await waitFor(async () => Number((await stack.t.db('api_logs').where({ user_id: ownerId }).count<Array<{ count: string }>>('* as count'))[0]!.count) === 5, 'the API-key request too', 30_000);

    const now = Date.now();
    await pastRun(now - 3 * DAY_MS, 'older-model', [{ input: 1000, output: 200 }, { input: 500, output: 100 }]);
    await pastRun(now - 3 * DAY_MS, AGENT_MODEL, [{ input: 10, output: 10 }]);
    await pastRun(now - 10 * DAY_MS, AGENT_MODEL, [{ input: 7, output: 3 }]);
    await pastRun(now - 40 * DAY_MS, AGENT_MODEL, [{ input: 9, output: 9 }]);

    const week = await usage();
    assert.equal(week.status, 200, JSON.stringify(week.body));
    assert.equal(week.body.days, 7);
    assert.deepEqual(week.body.daily.map((d) => d.day), Array.from({ length: 7 }, (_, i) => dateOf(now - (6 - i) * DAY_MS)), 'every UTC day, oldest first, ending today');
    assert.equal(week.body.from, dateOf(now - 6 * DAY_MS));
    assert.equal(week.body.to, dateOf(now));

    const today = { turns: 2, requests: 3, input_tokens: 3 * PER_REQUEST.input, output_tokens: 3 * PER_REQUEST.output, cost_usd: 3 * 74_000 / 1e9 };
    const todayEntry = week.body.daily[6]!;
    assert.deepEqual(todayEntry, { day: dateOf(now), ...today, models: [{ model: AGENT_MODEL, ...today }] });
    // The same numbers as the gateway's own rows for those requests.
    const logged = await stack.t.db('api_logs').where({ user_id: ownerId }).whereRaw(`metadata->>'grant_id' like 'grant_att_%'`).where('created_at', '>=', new Date(Math.floor(now / DAY_MS) * DAY_MS))
      .first<{ input: string; output: string; cost: string }>(stack.t.db.raw('sum(prompt_tokens) as input, sum(completion_tokens) as output, sum(cost_usd) as cost'));
    assert.deepEqual([Number(logged.input), Number(logged.output), Number(logged.cost)], [today.input_tokens, today.output_tokens, today.cost_usd]);

    const older = { turns: 1, requests: 2, input_tokens: 1500, output_tokens: 300, cost_usd: (1500 * 2 + 300 * 10) / 1e6 };
    const agentThen = { turns: 1, requests: 1, input_tokens: 10, output_tokens: 10, cost_usd: (10 * 2 + 10 * 10) / 1e6 };
    assert.deepEqual(week.body.daily[3], {
      day: dateOf(now - 3 * DAY_MS), turns: 2, requests: 3, input_tokens: 1510, output_tokens: 310, cost_usd: 0.00612,
      models: [{ model: AGENT_MODEL, ...agentThen }, { model: 'older-model', ...older }],
    });
    for (const i of [0, 1, 2, 4, 5]) assert.deepEqual(week.body.daily[i], { day: dateOf(now - (6 - i) * DAY_MS), ...zero, models: [] });
    assert.deepEqual(week.body.totals, { turns: 4, requests: 6, input_tokens: 1546, output_tokens: 325, cost_usd: 0.006342 });
    assert.deepEqual(week.body.models.map((m) => [m.model, m.turns, m.requests]), [[AGENT_MODEL, 3, 4], ['older-model', 1, 2]]);

    const month = await usage('?days=30');
    assert.equal(month.status, 200);
    assert.equal(month.body.daily.length, 30);
    assert.equal(month.body.from, dateOf(now - 29 * DAY_MS));
    assert.deepEqual(month.body.daily[19], { day: dateOf(now - 10 * DAY_MS), turns: 1, requests: 1, input_tokens: 7, output_tokens: 3, cost_usd: 44e-6, models: [{ model: AGENT_MODEL, turns: 1, requests: 1, input_tokens: 7, output_tokens: 3, cost_usd: 44e-6 }] });
    assert.deepEqual([month.body.totals.turns, month.body.totals.requests], [5, 7], 'the run 40 days ago is outside both windows');
    assert.deepEqual((await usage('?days=7')).body, week.body);

    // The other owner sees only their own run; nothing names a host, container or generation.
    const theirs = await usage('', otherKey);
    assert.deepEqual([theirs.body.totals.turns, theirs.body.totals.requests], [1, 1]);
    const text = JSON.stringify([week.body, month.body]);
    for (const word of [stack.hostId, 'host', 'container', 'generation', 'sbx-', 'image', 'grp_']) assert.ok(!text.includes(word), `no ${word}`);
  });

  it('refuses days other than 7 or 30 with 400 naming days, and needs an owner', async () => {
    for (const query of ['?days=14', '?days=', '?days=7.0', '?days=07', '?days=seven', '?days=7&days=30', '?days=-1']) {
      const res = await usage(query);
      assert.equal(res.status, 400, query);
      assert.equal(res.body.error?.param, 'days', query);
    }
    assert.equal((await fetch(`${stack.api.url}/v1/agent/usage/runs`)).status, 401);
  });
});
