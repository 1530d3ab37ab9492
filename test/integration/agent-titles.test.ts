/**
 * Generated chat titles (docs/agent-api.md "Titles") over the real stack (PostgreSQL, Temporal, Docker, gateway with
 * a fake LLM upstream): a new chat titled from its prompt gets the model's sanitized title through
 * a `title` grant that is revoked afterwards (≤ 4,000 prompt characters, `max_tokens` 256); an
 * owner-given title is never replaced; an owner rename during generation wins; unusable answers
 * and upstream failures are retried up to five calls, then logged, keeping the initial title.
 */
import assert from 'node:assert/strict';
import type { Db } from '../../lib/db';
import { createJob } from '../../agent/jobs/job-commands';
import { titleFromPrompt } from '../../agent/jobs/titles';
import { TITLE_SYSTEM_PROMPT } from '../../agent/jobs/generated-titles';
import { createTitleActivities } from '../../activities/control/title-activities';
import type { titleWorkflow } from '../../workflows/title';
import { titleWorkflowId, type TitleOutcome } from '../../workflows/definitions/title';
import { GatewayGrantClient } from '../../agent/grants/gateway-grant-client';
import type { Behaviour, RecordedRequest } from '../support/fake-upstream';
import { captureLogs } from '../support/logs';
import { startAgentStack, ownerCall, AGENT_MODEL, DISPATCH_TOKEN, type AgentStack } from '../support/agent-stack';
import { waitFor } from '../support/wait';

interface TitleBody {
  max_tokens: number;
  messages: Array<{ role: string; content: string }>;
}

/** The title requests the fake upstream received whose user message starts with `prefix`. */
function titleRequests(stack: AgentStack, prefix: string): TitleBody[] {
  return stack.upstream.chatRequests()
    .map((r: RecordedRequest) => r.body as TitleBody)
    .filter((b) => b.messages?.[0]?.content === TITLE_SYSTEM_PROMPT && b.messages[1]?.content.startsWith(prefix));
}

/**
 * Scripts the replies to the title calls of one chat (by its prompt's start), so a late call of an
 * earlier test (an aborted call the gateway still forwards) cannot take one of them.
 */
function scriptTitleReplies(stack: AgentStack, prefix: string, ...replies: Behaviour[]): void {
  stack.upstream.setResponder((r) => {
    const b = r.body as TitleBody | undefined;
    const ours = b?.messages?.[0]?.content === TITLE_SYSTEM_PROMPT && b.messages[1]?.content.startsWith(prefix);
    return ours ? replies.shift() : undefined;
  });
}

async function jobRow(db: Db, jobId: string): Promise<{ title: string; title_source: string }> {
  return db('agent_jobs').where({ job_id: jobId }).first('title', 'title_source');
}

async function titleGrant(db: Db, jobId: string): Promise<{ kind: string; job_id: string; revoked_at: Date | null; lifetime: number } | undefined> {
  return db('agent_grants').where({ operation_id: `title-${jobId}` })
    .first('kind', 'job_id', 'revoked_at', db.raw('extract(epoch from expires_at - created_at)::float as lifetime'));
}

async function createChat(stack: AgentStack, body: Record<string, unknown>): Promise<string> {
  const res = await ownerCall(stack, 'POST', '/v1/agent/jobs', { model: AGENT_MODEL, repo: null, ...body });
  assert.equal(res.status, 201, await res.clone().text());
  return ((await res.json()) as { job_id: string }).job_id;
}

async function titleOutcome(stack: AgentStack, jobId: string): Promise<TitleOutcome> {
  const handle = await waitFor(async () => {
    const h = stack.env.client.workflow.getHandle<typeof titleWorkflow>(titleWorkflowId(jobId));
    return (await h.describe().then(() => true, () => false)) ? h : undefined;
  }, `title workflow of ${jobId}`, 30_000);
  return handle.result();
}

async function settledTurn(stack: AgentStack, jobId: string): Promise<void> {
  await waitFor(async () => {
    const row = await stack.t.db('agent_turns').where({ job_id: jobId, seq: 1 }).first<{ state: string }>('state');
    return ['completed', 'failed', 'cancelled'].includes(row.state);
  }, `turn 1 of ${jobId} settled`, 90_000);
}

describe('generated chat titles (PostgreSQL + Temporal + Docker + gateway)', function () {
  this.timeout(180_000);
  let stack: AgentStack;
  let ownerId: number;

  before(async () => {
    stack = await startAgentStack({ env: { AGENT_TITLE_GENERATION_ENABLED: 'true' } });
    const owner = await stack.t.db('users').whereRaw('lower(email) like ?', ['owner-%']).first<{ id: string }>('id');
    ownerId = Number(owner.id);
  });
  after(async () => {
    await stack?.close();
  });
  afterEach(() => {
    stack.upstream.setDefault(undefined);
    stack.upstream.setResponder(undefined);
  });

  it('gives a new chat the model\'s sanitized title through a revoked 120 s title grant, sending ≤ 4,000 prompt characters', async () => {
    stack.upstream.setDefault({ kind: 'json', content: '"**Fix the flaky login test**"' });
    const prompt = `please look into the login test, it fails sometimes\n${'The details go on. '.repeat(400)}`;
    assert.ok(prompt.length > 4000);
    const jobId = await createChat(stack, { prompt });
    assert.equal((await jobRow(stack.t.db, jobId)).title, titleFromPrompt(prompt));

    assert.deepEqual(await titleOutcome(stack, jobId), { kind: 'generated', title: 'Fix the flaky login test', calls: 1 });
    assert.deepEqual(await jobRow(stack.t.db, jobId), { title: 'Fix the flaky login test', title_source: 'generated' });
    const view = (await (await ownerCall(stack, 'GET', `/v1/agent/jobs/${jobId}`)).json()) as { title: string };
    assert.equal(view.title, 'Fix the flaky login test');

    const [request, ...more] = titleRequests(stack, 'please look into the login test');
    assert.equal(more.length, 0);
    assert.equal(request!.max_tokens, 256);
    const sent = request!.messages[1]!.content;
    assert.ok(sent.length <= 4000 && sent.length > 3990, `sent ${sent.length} prompt characters`);
    assert.ok(sent === prompt.slice(0, 4000).trimEnd(), 'the title call carries the start of the prompt (cut at 4,000, trailing space trimmed)');

    const grant = await titleGrant(stack.t.db, jobId);
    assert.ok(grant, 'a title grant was issued');
    assert.equal(grant.kind, 'title');
    assert.equal(grant.job_id, jobId);
    assert.ok(grant.revoked_at instanceof Date, 'the title grant is revoked after use');
    assert.ok(grant.lifetime > 115 && grant.lifetime <= 121, `lifetime ${grant.lifetime}`);

    const events = await stack.t.db('agent_events').where({ job_id: jobId, event_type: 'title_changed' }).select<Array<{ payload: unknown }>>('payload');
    assert.deepEqual(events.map((e) => e.payload), [{ title: 'Fix the flaky login test', title_source: 'generated' }]);
    await settledTurn(stack, jobId);
  });

  it('never replaces an owner-given title', async () => {
    stack.upstream.setDefault({ kind: 'json', content: 'A generated title' });
    const jobId = await createChat(stack, { prompt: 'owner titled chat: list the files', title: 'My own title' });
    assert.deepEqual(await titleOutcome(stack, jobId), { kind: 'skipped', reason: 'not_prompt_title' });
    await settledTurn(stack, jobId);
    assert.deepEqual(await jobRow(stack.t.db, jobId), { title: 'My own title', title_source: 'owner' });
    assert.equal(await titleGrant(stack.t.db, jobId), undefined);
    assert.equal(titleRequests(stack, 'owner titled chat').length, 0);
  });

  it('title grants at the gateway: operation title-<job_id>, a fixed 120 s, never renewed, issued once', async () => {
    const grants = new GatewayGrantClient({ gatewayUrl: stack.gateway.url, dispatchToken: DISPATCH_TOKEN });
    const refused = (status: number) => (err: unknown) => (err as { status?: number }).status === status;
    await assert.rejects(grants.issue({ userId: ownerId, model: AGENT_MODEL, kind: 'title', operationId: 'title-job_a' }), refused(400));
    await assert.rejects(grants.issue({ userId: ownerId, model: AGENT_MODEL, kind: 'title', jobId: 'job_a', operationId: 'title-job_b' }), refused(400));
    const issued = await grants.issue({ userId: ownerId, model: AGENT_MODEL, kind: 'title', jobId: 'job_a', operationId: 'title-job_a', ttlSeconds: 3600 });
    assert.equal(issued.grantId, 'grant_title-job_a');
    assert.ok(Date.parse(issued.expiresAt) - Date.now() <= 120_000, 'the lifetime is fixed at 120 s');
    assert.equal(await grants.renew(issued.grantId, 3600), 'gone');
    await assert.rejects(grants.issue({ userId: ownerId, model: AGENT_MODEL, kind: 'title', jobId: 'job_a', operationId: 'title-job_a' }), refused(409));
    await grants.revoke(issued.grantId);
  });

  describe('the title activity on a chat without a workflow', () => {
    const logs = captureLogs('titles');
    let activities: ReturnType<typeof createTitleActivities>;

    before(() => {
      const grants = new GatewayGrantClient({ gatewayUrl: stack.gateway.url, dispatchToken: DISPATCH_TOKEN });
      activities = createTitleActivities({ db: stack.t.db, grants, settings: stack.settings, log: logs.log, limits: { retryDelayMs: 50 } });
    });

    async function newJob(prompt: string): Promise<string> {
      const { job } = await createJob(stack.t.db, { ownerId, body: { prompt, model: AGENT_MODEL, repo: null }, defaultDriver: 'builtin', executionProfile: 'untrusted-vm-v1' });
      return job.job_id;
    }

    it('retries unusable answers and upstream errors, and generates a chat\'s title only once', async () => {
      const jobId = await newJob('retry case: rename the helper');
      scriptTitleReplies(stack, 'retry case', { kind: 'json', content: '""' }, { kind: 'status', status: 500 }, { kind: 'json', content: 'Rename the helper\nbecause…' });
      assert.deepEqual(await activities.generateChatTitle({ jobId }), { kind: 'generated', title: 'Rename the helper', calls: 3 });
      assert.equal(titleRequests(stack, 'retry case').length, 3);
      assert.deepEqual(await activities.generateChatTitle({ jobId }), { kind: 'skipped', reason: 'not_prompt_title' });
      await stack.t.db('agent_jobs').where({ job_id: jobId }).update({ title_source: 'prompt' });
      assert.deepEqual(await activities.generateChatTitle({ jobId }), { kind: 'skipped', reason: 'already_generated' });
      assert.equal(titleRequests(stack, 'retry case').length, 3);
    });

    it('lets an owner rename made during generation win', async () => {
      const jobId = await newJob('rename case: tidy the docs');
      scriptTitleReplies(stack, 'rename case', { kind: 'slow_first_byte', delayMs: 1500, then: { kind: 'json', content: 'Tidy the docs' } });
      const running = activities.generateChatTitle({ jobId });
      await waitFor(() => titleRequests(stack, 'rename case').length === 1, 'the title call reached the upstream');
      await stack.t.db('agent_jobs').where({ job_id: jobId }).update({ title: 'Renamed by owner', title_source: 'owner' });
      assert.deepEqual(await running, { kind: 'skipped', reason: 'renamed' });
      assert.deepEqual(await jobRow(stack.t.db, jobId), { title: 'Renamed by owner', title_source: 'owner' });
      assert.ok((await titleGrant(stack.t.db, jobId))?.revoked_at instanceof Date);
    });

    it('stops at the 120 s window (shortened here) when calls keep timing out (10 s each, shortened here)', async () => {
      const windowed = createTitleActivities({
        db: stack.t.db, grants: new GatewayGrantClient({ gatewayUrl: stack.gateway.url, dispatchToken: DISPATCH_TOKEN }),
        settings: stack.settings, log: logs.log, limits: { windowMs: 1500, callTimeoutMs: 1000, retryDelayMs: 50 },
      });
      const jobId = await newJob('window case: slow model');
      stack.upstream.setDefault({ kind: 'slow_first_byte', delayMs: 20_000, then: { kind: 'json', content: 'Too late' } });
      const outcome = await windowed.generateChatTitle({ jobId });
      assert.equal(outcome.kind, 'failed');
      assert.ok(outcome.kind === 'failed' && outcome.calls >= 1 && outcome.calls <= 2, JSON.stringify(outcome));
      assert.equal(outcome.reason, 'window_elapsed_after_gateway_timeout');
      assert.equal((await jobRow(stack.t.db, jobId)).title_source, 'prompt');
      assert.ok((await titleGrant(stack.t.db, jobId))?.revoked_at instanceof Date);
    });

    it('keeps the initial title after five failed calls and logs agent_title_generation_failed without prompt or token', async () => {
      const prompt = 'failure case: secret-ish prompt words';
      const jobId = await newJob(prompt);
      scriptTitleReplies(
        stack, 'failure case',
        { kind: 'status', status: 500 }, { kind: 'json', content: '' }, { kind: 'status', status: 500 },
        { kind: 'json', content: '**  **' }, { kind: 'status', status: 500 },
      );
      const outcome = await activities.generateChatTitle({ jobId });
      assert.deepEqual(outcome, { kind: 'failed', calls: 5, reason: 'upstream_error' });
      assert.equal(titleRequests(stack, 'failure case').length, 5);
      assert.deepEqual(await jobRow(stack.t.db, jobId), { title: titleFromPrompt(prompt), title_source: 'prompt' });
      assert.ok((await titleGrant(stack.t.db, jobId))?.revoked_at instanceof Date);
      const line = logs.lines.find((l) => l.event === 'agent_title_generation_failed' && l.job_id === jobId);
      assert.ok(line, 'the failure is logged');
      assert.equal(line.calls, 5);
      const text = JSON.stringify(line);
      assert.ok(!text.includes('secret-ish') && !text.includes('agr_'), text);
    });
  });
});
