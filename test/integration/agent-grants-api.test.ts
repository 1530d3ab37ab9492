/**
 * The control plane's side of inference grants (real PostgreSQL, real gateway and API, a fake
 * upstream): a host runner fetches its running attempt's grant with its own credential, and an
 * owner's prompt rewrite runs on a 120 s grant that is revoked after the call, whatever happened.
 */
import assert from 'node:assert/strict';
import { GatewayGrantClient, type GrantIssueInput, type IssuedGatewayGrant } from '../../agent/grants/gateway-grant-client';
import { DISPATCH_TOKEN, insertOwner, startGrantGateway, insertResidency, messageOf, postWith, type Residency } from '../support/agent-grants';
import { startTestApi, type TestApi } from '../support/api';
import { freshDatabase, type TestDatabase } from '../support/db';
import { startFakeUpstream, type FakeUpstream } from '../support/fake-upstream';
import type { TestGateway } from '../support/gateway';

/** The real client, remembering what it issued (the test needs the tokens the API never returns). */
class RecordingGrantClient extends GatewayGrantClient {
  readonly issued: IssuedGatewayGrant[] = [];
  override async issue(input: GrantIssueInput): Promise<IssuedGatewayGrant> {
    const grant = await super.issue(input);
    this.issued.push(grant);
    return grant;
  }
}

interface HostGrant {
  grant_id: string;
  token: string;
  expires_at: string;
  model: string;
}

describe('inference grants: host grant route and prompt rewrite', function () {
  this.timeout(60_000);
  let t: TestDatabase;
  let upstream: FakeUpstream;
  let gw: TestGateway;
  let api: TestApi;
  let grants: RecordingGrantClient;
  let owner: number;
  let ownerToken: string;
  let host = 0;

  const chat = (token: string) => fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
  });
  const fetchGrant = (r: Pick<Residency, 'hostId' | 'attemptId'>, credential: string, url = api.url) =>
    postWith<HostGrant>(`${url}/v1/agent/hosts/${r.hostId}/attempts/${r.attemptId}/grant`, {}, credential);
  const residency = () => {
    host += 1;
    return insertResidency(t.db, { ownerId: owner, model: 'm', hostId: `grant-host-${host}` });
  };
  const rewrite = (body: unknown, token: string | null = ownerToken, url = api.url) => postWith(`${url}/v1/agent/prompts/rewrite`, body, token);
  const reply = (content: string) => upstream.enqueue({ kind: 'json', content });
  const lastGrant = () => grants.issued[grants.issued.length - 1]!;
  const assertRevoked = async (grant: IssuedGatewayGrant) => {
    const row = await t.db('agent_grants').where({ grant_id: grant.grantId }).first<{ kind: string; revoked_at: Date | null; operation_id: string }>();
    assert.equal(row?.kind, 'prompt_rewrite');
    assert.match(row?.operation_id ?? '', /^prompt-rewrite-[0-9a-f-]{36}$/);
    assert.ok(row?.revoked_at instanceof Date, 'the rewrite grant is revoked after the call');
    assert.equal((await chat(grant.token)).status, 401, 'the rewrite grant token is refused afterwards');
  };

  before(async () => {
    t = await freshDatabase();
    upstream = await startFakeUpstream();
    gw = await startGrantGateway(t.db, upstream.url);
    grants = new RecordingGrantClient({ gatewayUrl: gw.url, dispatchToken: DISPATCH_TOKEN });
    api = await startTestApi({ db: t.db, env: { AGENT_GATEWAY_URL: gw.url } });
    api.deps.grants = grants;
    owner = await insertOwner(t.db, 'owner@example.com');
    ownerToken = api.deps.tokens.issue({ id: owner, role: 'pro' }).access_token;
  });
  after(async () => {
    await api?.close();
    await gw?.close();
    await upstream?.close();
    await t?.drop();
  });

  describe('host grant route', () => {
    it('gives the host a turn grant of the job’s owner and model for its running attempt; fetching again rotates it', async () => {
      const r = await residency();
      const first = await fetchGrant(r, r.hostCredential);
      assert.equal(first.status, 200, JSON.stringify(first.body));
      assert.equal(first.body.grant_id, `grant_${r.attemptId}`);
      assert.equal(first.body.model, 'm');
      assert.match(first.body.token, /^agr_/);
      const row = await t.db('agent_grants').where({ grant_id: first.body.grant_id }).first<Record<string, unknown>>();
      assert.deepEqual(
        [Number(row?.user_id), row?.kind, row?.job_id, row?.attempt_id, row?.host_id, row?.group_id, row?.generation],
        [owner, 'turn', r.jobId, r.attemptId, r.hostId, r.groupId, r.generation],
      );
      assert.equal((await chat(first.body.token)).status, 200);
      const second = await fetchGrant(r, r.hostCredential);
      assert.equal(second.body.grant_id, first.body.grant_id);
      assert.equal((await chat(first.body.token)).status, 401, 'the retried fetch rotated the token');
      assert.equal((await chat(second.body.token)).status, 200);
    });

    it('refuses other hosts’ credentials (401) and attempts that are not current (409)', async () => {
      const r = await residency();
      const other = await residency();
      assert.equal((await fetchGrant(r, other.hostCredential)).status, 401);
      assert.equal((await fetchGrant(r, 'ahc_wrong')).status, 401);
      const foreign = await fetchGrant({ hostId: other.hostId, attemptId: r.attemptId }, other.hostCredential);
      assert.equal(foreign.status, 409);
      assert.equal(messageOf(foreign), 'Attempt is not current');
      await t.db('agent_hosts').where({ host_id: other.hostId }).update({ last_heartbeat_at: t.db.raw("now() - interval '10 minutes'") });
      assert.equal((await fetchGrant(other, other.hostCredential)).status, 409, 'a stale host gets no grant');
      await t.db('agent_attempts').where({ attempt_id: r.attemptId }).update({ state: 'completed', finished_at: t.db.fn.now() });
      assert.equal((await fetchGrant(r, r.hostCredential)).status, 409);
      assert.equal(await t.db('agent_grants').whereIn('attempt_id', [r.attemptId, other.attemptId]).count<Array<{ count: string }>>('* as count').then((x) => Number(x[0]!.count)), 0);
    });

    it('answers 503 when the API has no grant dispatch configured', async () => {
      const bare = await startTestApi({ db: t.db });
      try {
        const r = await residency();
        const res = await fetchGrant(r, r.hostCredential, bare.url);
        assert.equal(res.status, 503);
        assert.match(messageOf(res), /not configured/);
        const rw = await rewrite({ prompt: 'x', model: 'm' }, ownerToken, bare.url);
        assert.equal(rw.status, 503);
      } finally {
        await bare.close();
      }
    });
  });

  describe('prompt rewrite', () => {
    it('asks 2 to 4 clarification questions when clarify is set without answers, on a revoked-after rewrite grant', async () => {
      const jobsBefore = await t.db('agent_jobs').count<Array<{ count: string }>>('* as count');
      const seen = upstream.requests.length;
      reply('{"questions": ["Which branch?", " Which tests must pass? "]}');
      const res = await rewrite({ prompt: 'fix the build', model: 'm', clarify: true });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.deepEqual(res.body, { questions: ['Which branch?', 'Which tests must pass?'] });
      const sent = upstream.requests[seen]!.body as { messages: Array<{ role: string; content: string }> };
      assert.equal(sent.messages[0]?.role, 'system');
      assert.match(sent.messages[0].content, /strict JSON/);
      assert.match(sent.messages[1]!.content, /fix the build/);
      await assertRevoked(lastGrant());
      assert.deepEqual(await t.db('agent_jobs').count<Array<{ count: string }>>('* as count'), jobsBefore, 'no job is created');
    });

    it('returns a rewritten prompt built with the answers', async () => {
      const seen = upstream.requests.length;
      reply('```json\n{"prompt": "Fix the build on main; make `npm test` pass."}\n```');
      const res = await rewrite({ prompt: 'fix the build', model: 'm', clarify: true, answers: [{ question: 'Which branch?', answer: 'main' }] });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.deepEqual(res.body, { prompt: 'Fix the build on main; make `npm test` pass.' });
      const sent = upstream.requests[seen]!.body as { messages: Array<{ content: string }> };
      assert.match(sent.messages[1]!.content, /Which branch\?.*main/);
      await assertRevoked(lastGrant());
    });

    it('refuses model replies that do not parse or break the counts with 502, still revoking the grant', async () => {
      const cases: Array<[Record<string, unknown>, string, RegExp]> = [
        [{ clarify: true }, 'not json at all', /not valid JSON/],
        [{ clarify: true }, '{"questions": ["only one?"]}', /1 questions; 2 to 4/],
        [{ clarify: true }, '{"questions": ["a", "b", "c", "d", "e"]}', /5 questions/],
        [{}, '{"text": "wrong field"}', /"prompt" must be/],
        [{}, JSON.stringify({ prompt: 'x'.repeat(32_001) }), /32001 characters/],
      ];
      for (const [extra, content, message] of cases) {
        reply(content);
        const issuedBefore = grants.issued.length;
        const res = await rewrite({ prompt: 'fix the build', model: 'm', ...extra });
        assert.equal(res.status, 502, content.slice(0, 40));
        assert.match(messageOf(res), message);
        assert.equal(grants.issued.length, issuedBefore + 1);
        await assertRevoked(lastGrant());
      }
    });

    it('validates the body (400 naming the field) and needs an owner with agent.use', async () => {
      const cases: Array<[unknown, string]> = [
        [{ model: 'm' }, 'prompt'],
        [{ prompt: 'x'.repeat(32_001), model: 'm' }, 'prompt'],
        [{ prompt: 7, model: 'm' }, 'prompt'],
        [{ prompt: 'x' }, 'model'],
        [{ prompt: 'x', model: 'm', clarify: 'yes' }, 'clarify'],
        [{ prompt: 'x', model: 'm', answers: Array.from({ length: 5 }, () => ({ question: 'q', answer: 'a' })) }, 'answers'],
        [{ prompt: 'x', model: 'm', answers: [{ question: 'q' }] }, 'answers.0.answer'],
        [{ prompt: 'x', model: 'm', surprise: true }, 'surprise'],
      ];
      const issuedBefore = grants.issued.length;
      for (const [body, field] of cases) {
        const res = await rewrite(body);
        assert.equal(res.status, 400, JSON.stringify(body).slice(0, 80));
        assert.ok(messageOf(res).includes(field), `${messageOf(res)} names ${field}`);
      }
      assert.equal(grants.issued.length, issuedBefore, 'invalid requests issue no grant');
      assert.equal((await rewrite({ prompt: 'x', model: 'm' }, null)).status, 401);
      const stranger = await insertOwner(t.db, 'no-agent@example.com', { permissions: [] });
      assert.equal((await rewrite({ prompt: 'x', model: 'm' }, api.deps.tokens.issue({ id: stranger, role: 'pro' }).access_token)).status, 403);
    });

    it('answers 404 for a model the gateway does not know', async () => {
      const res = await rewrite({ prompt: 'x', model: 'no-such-model' });
      assert.equal(res.status, 404);
      assert.match(messageOf(res), /no-such-model/);
    });

    it('answers 504 when the model does not answer within the deadline, and revokes the grant', async () => {
      const slow = await startTestApi({ db: t.db, env: { AGENT_GATEWAY_URL: gw.url, AGENT_PROMPT_REWRITE_DEADLINE_SECONDS: '1' } });
      slow.deps.grants = grants;
      try {
        upstream.enqueue({ kind: 'slow_first_byte', delayMs: 5000, then: { kind: 'json', content: '{"prompt": "late"}' } });
        const res = await rewrite({ prompt: 'fix the build', model: 'm' }, ownerToken, slow.url);
        assert.equal(res.status, 504);
        assert.match(messageOf(res), /did not finish within 1 s/);
        await assertRevoked(lastGrant());
      } finally {
        await slow.close();
      }
    });
  });
});
