/**
 * Pull-request titles (activities/control/pr-title.ts; docs/publisher.md "Title") over the real
 * gateway with a fake LLM upstream and PostgreSQL: the title comes from the job's model through a
 * `title` grant with operation `pr-title-<job_id>` (120 s, revoked after use, issued once per
 * chat), the call carries at most 4,000 input characters (the changed files, then the prompt) and
 * asks for at most 256 tokens, an answer is sanitized like a chat title, and when five calls fail
 * the generator says why (a reason code, never prompt text) for `agent_pr_title_generation_failed`.
 */
import assert from 'node:assert/strict';
import { createPrTitleGenerator, PR_TITLE_SYSTEM_PROMPT } from '../../activities/control/pr-title';
import { GatewayGrantClient } from '../../agent/grants/gateway-grant-client';
import { createJob } from '../support/agent-records';
import { captureLogs } from '../support/logs';
import { AGENT_MODEL, DISPATCH_TOKEN, startAgentStack, type AgentStack } from '../support/agent-stack';

interface TitleBody {
  max_tokens: number;
  messages: Array<{ role: string; content: string }>;
}

const PATCH = Buffer.from('diff --git a/src/greeting.ts b/src/greeting.ts\nnew file mode 100644\n--- /dev/null\n+++ b/src/greeting.ts\n@@ -0,0 +1 @@\n+export const hi = 1;\n');

describe('pull-request titles (gateway + fake upstream + PostgreSQL)', function () {
  this.timeout(120_000);
  let stack: AgentStack;
  let ownerId: number;
  let generate: ReturnType<typeof createPrTitleGenerator>;

  const requests = (): TitleBody[] => stack.upstream.chatRequests().map((r) => r.body as TitleBody).filter((b) => b.messages?.[0]?.content === PR_TITLE_SYSTEM_PROMPT);
  const grantOf = (jobId: string) => stack.t.db('agent_grants').where({ operation_id: `pr-title-${jobId}` })
    .first<{ kind: string; job_id: string; revoked_at: Date | null; lifetime: number } | undefined>('kind', 'job_id', 'revoked_at', stack.t.db.raw('extract(epoch from expires_at - created_at)::float as lifetime'));

  before(async () => {
    stack = await startAgentStack({ workers: 'none' });
    const owner = await stack.t.db('users').whereRaw('lower(email) like ?', ['owner-%']).first<{ id: string }>('id');
    ownerId = Number(owner.id);
    generate = createPrTitleGenerator({
      grants: new GatewayGrantClient({ gatewayUrl: stack.gateway.url, dispatchToken: DISPATCH_TOKEN }), gatewayUrl: () => stack.gateway.url,
      log: captureLogs('pr-title').log, limits: { retryDelayMs: 50 },
    });
  });
  after(async () => {
    await stack?.close();
  });

  it('asks the job\'s model with the changed files and at most 4,000 characters, through a revoked 120 s pr-title grant, once per chat', async () => {
    const jobId = await createJob(stack.t.db, ownerId);
    stack.upstream.enqueue({ kind: 'json', content: '"**Add a greeting module**"' });
    const prompt = `Please add a greeting. ${'word '.repeat(1500)}`;
    const before = requests().length;
    assert.deepEqual(await generate({ jobId, turnId: 'turn_x', ownerId, model: AGENT_MODEL, prompt, patch: PATCH }), { title: 'Add a greeting module' });
    const [request, ...more] = requests().slice(before);
    assert.ok(request);
    assert.equal(more.length, 0);
    assert.equal(request.max_tokens, 256);
    const sent = request.messages[1]?.content ?? '';
    assert.ok(Array.from(sent).length <= 4000, `${sent.length} characters`);
    assert.match(sent, /^Changed files:\nsrc\/greeting\.ts\n\nRequest:\nPlease add a greeting\./);
    const grant = await grantOf(jobId);
    assert.ok(grant);
    assert.deepEqual([grant.kind, grant.job_id], ['title', jobId]);
    assert.ok(grant.revoked_at instanceof Date, 'revoked after use');
    assert.ok(grant.lifetime > 115 && grant.lifetime <= 121, `lifetime ${grant.lifetime}`);
    // The grant is issued once per chat: a second generation is refused and says so.
    assert.deepEqual(await generate({ jobId, turnId: 'turn_y', ownerId, model: AGENT_MODEL, prompt: 'again', patch: PATCH }), { reason: 'grant_refused_409' });
  });

  it('gives up after five failed calls with a reason code and no prompt text', async () => {
    const jobId = await createJob(stack.t.db, ownerId);
    stack.upstream.enqueue(
      { kind: 'status', status: 500 }, { kind: 'json', content: '""' }, { kind: 'status', status: 500 }, { kind: 'json', content: '***' }, { kind: 'status', status: 500 },
    );
    const before = requests().length;
    const answer = await generate({ jobId, turnId: 'turn_z', ownerId, model: AGENT_MODEL, prompt: 'a secret plan', patch: PATCH });
    assert.equal(requests().length - before, 5, 'five calls');
    assert.ok('reason' in answer && /after_5_calls$/.test(answer.reason), JSON.stringify(answer));
    assert.doesNotMatch(JSON.stringify(answer), /secret plan/);
    assert.ok((await grantOf(jobId))?.revoked_at instanceof Date);
  });
});
