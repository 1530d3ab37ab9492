/**
 * OAuth for remote MCP connections (real PostgreSQL, the real API, and a real OAuth-protected MCP
 * server on loopback built from the SDK's own authorization server and `requireBearerAuth`): the
 * owner starts (state + PKCE S256), the authorization server redirects with a code, the owner's
 * page posts `{code, state}`; the state is bound, expires and is consumed once; tokens are sealed,
 * never shown, refreshed when expiring; a relay call that waited for a refresh re-checks its attempt
 * and residency generation (table-tested); a connection that needs authorization is a clear
 * `tool_result` error.
 */
import assert from 'node:assert/strict';
import { startTestApi, type TestApi } from '../../../support/api';
import { freshDatabase, type TestDatabase } from '../../../support/db';
import { insertResidency, type Residency } from '../../../support/agent-grants';
import { createOwner, type TestOwner } from '../../../support/agent-records';
import { hashSecret } from '../../../../lib/crypto';
import { startOAuthMcpServer, type OAuthMcpServer } from '../../../support/mcp-oauth-server';

const KEY = 'mcp-oauth-settings-encryption-key-of-32-bytes';
const REDIRECT = 'https://app.example.test/mcp/oauth/return';

describe('OAuth for remote MCP connections (PostgreSQL, a real OAuth-protected MCP server)', function () {
  this.timeout(120_000);
  let t: TestDatabase;
  let api: TestApi;
  let owner: TestOwner;
  let stranger: TestOwner;
  let server: OAuthMcpServer;
  let connectionId: string;
  let hosts = 0;
  /** Every state and code the authorization server sent back (looked for in the logs). */
  const states: string[] = [];

  const request = async (method: string, path: string, token: string, body?: unknown) => {
    const res = await fetch(`${api.url}${path}`, {
      method, headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, text, body: (text.startsWith('{') ? JSON.parse(text) : {}) as Record<string, any> }; // eslint-disable-line @typescript-eslint/no-explicit-any -- JSON
  };
  const messageOf = (body: Record<string, unknown>) => (body.error as { message: string }).message;
  const oauthPath = (id: string, step: string) => `/v1/agent/mcp/connections/${id}/oauth/${step}`;
  /** Starts authorizing and follows the authorization URL as the owner's browser would: the code and state of the redirect. */
  const consent = async (id = connectionId) => {
    const started = await request('POST', oauthPath(id, 'start'), owner.apiKey, {});
    assert.equal(started.status, 201, started.text);
    const authorization = new URL(started.body.authorization_url as string);
    const redirected = await fetch(authorization, { redirect: 'manual' });
    assert.equal(redirected.status, 302);
    const back = new URL(redirected.headers.get('location')!);
    states.push(back.searchParams.get('state')!, back.searchParams.get('code')!);
    assert.equal(`${back.origin}${back.pathname}`, REDIRECT);
    return { authorization, code: back.searchParams.get('code')!, state: back.searchParams.get('state')! };
  };
  const authorize = async () => {
    const { code, state } = await consent();
    const done = await request('POST', oauthPath(connectionId, 'callback'), owner.apiKey, { code, state });
    assert.equal(done.status, 200, done.text);
  };
  const grantOf = async () => (await t.db('agent_mcp_connections').where({ connection_id: connectionId }).first<{ oauth_sealed: string | null } | undefined>('oauth_sealed'))?.oauth_sealed ?? null;
  const chat = async () => {
    hosts += 1;
    const residency: Residency = await insertResidency(t.db, { ownerId: owner.userId, model: 'm', hostId: `oauth-host-${hosts}` });
    await request('PUT', `/v1/agent/mcp/chats/${residency.jobId}/bindings`, owner.apiKey, { connections: [connectionId] });
    const issued = await request('POST', `/v1/agent/hosts/${residency.hostId}/attempts/${residency.attemptId}/tool-credentials`, residency.hostCredential, {});
    assert.equal(issued.status, 200, issued.text);
    return { residency, mcp: issued.body.mcp_token as string };
  };
  const whoami = (token: string) => request('POST', '/v1/agent/mcp/relay/call', token, { tool: 'protected__whoami', arguments: {} });

  before(async () => {
    t = await freshDatabase();
    server = await startOAuthMcpServer();
    api = await startTestApi({
      db: t.db,
      env: { AGENT_SETTINGS_ENCRYPTION_KEY: KEY, AGENT_MCP_ALLOW_PRIVATE_NETWORK: 'true', AGENT_MCP_OAUTH_REDIRECT_URL: REDIRECT, AGENT_MCP_CALL_TIMEOUT_SECONDS: '20' },
    });
    owner = await createOwner(t.db);
    stranger = await createOwner(t.db);
    const created = await request('POST', '/v1/agent/mcp/connections', owner.apiKey, { name: 'protected', url: server.url });
    assert.equal(created.status, 201, created.text);
    connectionId = created.body.connection_id as string;
  });
  after(async () => {
    await api?.close();
    await server?.close();
    await t?.drop();
  });

  it('names the missing authorization when the server answers 401 to discovery', async () => {
    const discovered = await request('POST', `/v1/agent/mcp/connections/${connectionId}/discover`, owner.apiKey, {});
    assert.equal(discovered.status, 502, discovered.text);
    assert.match(messageOf(discovered.body), /needs OAuth authorization: the owner must authorize the connection/);
  });

  it('starts with an unpredictable state and a PKCE S256 challenge for the configured redirect page', async () => {
    const first = await consent();
    const second = await consent();
    for (const { authorization } of [first, second]) {
      assert.equal(authorization.searchParams.get('response_type'), 'code');
      assert.equal(authorization.searchParams.get('code_challenge_method'), 'S256');
      assert.match(authorization.searchParams.get('code_challenge') ?? '', /^[A-Za-z0-9_-]{43}$/);
      assert.equal(authorization.searchParams.get('redirect_uri'), REDIRECT);
    }
    assert.match(first.state, /^[A-Za-z0-9_-]{43}$/);
    assert.notEqual(first.state, second.state);
    const stored = await t.db('agent_mcp_oauth_states').select<Array<{ state_hash: string; flow_sealed: string }>>('state_hash', 'flow_sealed');
    assert.ok(stored.every((row) => row.state_hash !== first.state && !row.flow_sealed.includes(first.state)), 'the state is stored only as its digest');
  });

  it('refuses a state that is unknown, another connection\'s, expired or replayed, and another owner\'s call, changing nothing', async () => {
    const { code, state } = await consent();
    const refusals: Array<[string, string, unknown, number, RegExp]> = [
      ['unknown state', owner.apiKey, { code, state: 'x'.repeat(43) }, 400, /state is unknown/],
      ['another owner', stranger.apiKey, { code, state }, 404, /not found/],
      ['an unknown field', owner.apiKey, { code, state, extra: 1 }, 400, /extra/],
      ['no code', owner.apiKey, { state }, 400, /code/],
    ];
    for (const [what, key, body, status, message] of refusals) {
      const answer = await request('POST', oauthPath(connectionId, 'callback'), key, body);
      assert.equal(answer.status, status, `${what}: ${answer.text}`);
      assert.match(answer.text, message, what);
    }
    assert.equal(await grantOf(), null, 'nothing was stored');
    assert.equal(server.provider.counts.codeExchanges, 0, 'no code was exchanged');
    const expired = await consent();
    await t.db('agent_mcp_oauth_states').where({ state_hash: hashSecret(expired.state) }).update({ expires_at: t.db.raw(`now() - interval '1 second'`) });
    const late = await request('POST', oauthPath(connectionId, 'callback'), owner.apiKey, { code: expired.code, state: expired.state });
    assert.equal(late.status, 400, late.text);
    assert.match(messageOf(late.body), /expired/);
    const fresh = await consent();
    const body = { code: fresh.code, state: fresh.state };
    const sibling = await request('POST', '/v1/agent/mcp/connections', owner.apiKey, { name: 'sibling', url: server.url });
    const crossed = await request('POST', oauthPath(sibling.body.connection_id as string, 'callback'), owner.apiKey, body);
    assert.equal(crossed.status, 400, crossed.text);
    assert.match(messageOf(crossed.body), /issued for another connection/);
    const done = await request('POST', oauthPath(connectionId, 'callback'), owner.apiKey, body);
    assert.equal(done.status, 200, done.text);
    const replay = await request('POST', oauthPath(connectionId, 'callback'), owner.apiKey, body);
    assert.equal(replay.status, 400, replay.text);
    assert.match(messageOf(replay.body), /already used/);
    assert.equal(server.provider.counts.codeExchanges, 1, 'the replayed state exchanged nothing');
  });

  it('stores the tokens sealed, never shows them, and discovers the server with them', async () => {
    await authorize();
    const view = await request('GET', `/v1/agent/mcp/connections/${connectionId}`, owner.apiKey);
    assert.equal((view.body.oauth as { authorized: boolean }).authorized, true);
    const sealed = (await grantOf())!;
    const discovered = await request('POST', `/v1/agent/mcp/connections/${connectionId}/discover`, owner.apiKey, {});
    assert.equal(discovered.status, 200, discovered.text);
    assert.deepEqual((discovered.body.capabilities as { tools: Array<{ name: string }> }).tools.map((tool) => tool.name), ['whoami']);
    for (const value of server.provider.issued) {
      assert.ok(!sealed.includes(value), 'no token in the clear at rest');
      assert.ok(!view.text.includes(value) && !discovered.text.includes(value), 'no token in a view');
    }
  });

  it('calls the tool with the token, and refreshes an expiring one once before the call', async () => {
    const c = await chat();
    const plain = await whoami(c.mcp);
    assert.deepEqual([plain.status, plain.body.is_error], [200, false], plain.text);
    assert.match(plain.body.output as string, /^authorized client /);
    assert.equal(server.provider.counts.refreshes, 0);
    server.provider.accessTtlSeconds = 30;
    await authorize();
    server.provider.accessTtlSeconds = 3600;
    const refreshed = await whoami(c.mcp);
    assert.deepEqual([refreshed.status, refreshed.body.is_error], [200, false], refreshed.text);
    assert.equal(server.provider.counts.refreshes, 1, 'the expiring token was refreshed');
    assert.equal((await whoami(c.mcp)).body.is_error, false);
    assert.equal(server.provider.counts.refreshes, 1, 'the refreshed token is used as is');
  });

  it('refreshes once for two calls that find the token expiring together (the refresh token is single-use)', async () => {
    const c = await chat();
    server.provider.accessTtlSeconds = 30;
    await authorize();
    server.provider.accessTtlSeconds = 3600;
    const refreshes = server.provider.counts.refreshes;
    const answers = await Promise.all([whoami(c.mcp), whoami(c.mcp)]);
    assert.deepEqual(answers.map((a): unknown[] => [a.status, a.body.is_error]), [[200, false], [200, false]], answers.map((a) => a.text).join('\n'));
    assert.equal(server.provider.counts.refreshes, refreshes + 1, 'one refresh served both calls');
  });

  it('answers a tool_result error naming the owner\'s authorization when the refresh is refused, without calling the tool', async () => {
    const c = await chat();
    server.provider.accessTtlSeconds = 30;
    await authorize();
    server.provider.accessTtlSeconds = 3600;
    const calls = server.toolCalls();
    server.provider.refuseRefresh = true;
    try {
      const refused = await whoami(c.mcp);
      assert.deepEqual([refused.status, refused.body.is_error], [200, true], refused.text);
      assert.match(refused.body.output as string, /refused to refresh its OAuth token .*: the owner must authorize the connection/);
    } finally {
      server.provider.refuseRefresh = false;
    }
    assert.equal(server.toolCalls(), calls, 'the tool was not called');
  });

  const waits: Array<[string, (r: Residency) => Promise<unknown>]> = [
    ['its attempt ended', (r) => t.db('agent_attempts').where({ attempt_id: r.attemptId }).update({ state: 'abandoned' })],
    ['its sandbox was recreated (new generation)', (r) => t.db('agent_sandboxes').where({ group_id: r.groupId }).update({ generation: 9 })],
    ['the owner stopped its turn', (r) => t.db('agent_turns').where({ turn_id: r.turnId }).update({ state: 'cancelled' })],
  ];
  for (const [what, change] of waits) {
    it(`re-checks after waiting for a token refresh: 401 and the server is not called when ${what} during the wait`, async () => {
      const c = await chat();
      server.provider.accessTtlSeconds = 30;
      await authorize();
      server.provider.accessTtlSeconds = 3600;
      const calls = server.toolCalls();
      const refreshes = server.provider.counts.refreshes;
      server.provider.beforeRefresh = async () => { await change(c.residency); };
      try {
        const answer = await whoami(c.mcp);
        assert.equal(answer.status, 401, answer.text);
      } finally {
        server.provider.beforeRefresh = () => Promise.resolve();
      }
      assert.equal(server.provider.counts.refreshes, refreshes + 1, 'the relay did wait for a refresh');
      assert.equal(server.toolCalls(), calls, 'the tool was not called');
      const recorded = await t.db('agent_events').where({ job_id: c.residency.jobId }).pluck<string[]>('event_type');
      assert.deepEqual(recorded, ['tool_use'], 'no tool_result is written');
    });
  }

  it('answers a tool_result error naming the owner\'s authorization when the server refuses the token, or none is held', async () => {
    const c = await chat();
    server.provider.revokeAllAccess();
    const refused = await whoami(c.mcp);
    assert.deepEqual([refused.status, refused.body.is_error], [200, true], refused.text);
    assert.match(refused.body.output as string, /refused its OAuth token: the owner must authorize the connection/);
    await t.db('agent_mcp_connections').where({ connection_id: connectionId }).update({ oauth_sealed: null, updated_at: t.db.fn.now() });
    const none = await whoami(c.mcp);
    assert.equal(none.body.is_error, true);
    assert.match(none.body.output as string, /needs OAuth authorization: the owner must authorize the connection \(POST \/v1\/agent\/mcp\/connections\/mcpc_/);
    const results = await t.db('agent_events').where({ job_id: c.residency.jobId, event_type: 'tool_result' }).count<{ count: string }[]>('* as count').first();
    assert.equal(Number(results?.count), 2, 'both refusals are recorded');
  });

  it('never writes a token, code or state to the API\'s logs', () => {
    const logged = JSON.stringify(api.logs.lines);
    assert.ok(api.logs.lines.length > 0, 'the API logged its requests');
    const leaked = [...server.provider.issued, ...states].filter((value) => logged.includes(value));
    assert.deepEqual(leaked, []);
  });

  it('is 404 to start on another owner\'s connection or an unknown one', async () => {
    assert.equal((await request('POST', oauthPath(connectionId, 'start'), stranger.apiKey, {})).status, 404);
    assert.equal((await request('POST', oauthPath('mcpc_aaaaaaaaaaaaaaaaaaaa', 'start'), owner.apiKey, {})).status, 404);
  });

  it('drops the grant and the authorizations under way when the URL changes', async () => {
    await authorize();
    const pending = await consent();
    const patched = await request('PATCH', `/v1/agent/mcp/connections/${connectionId}`, owner.apiKey, { url: server.url });
    assert.equal(patched.status, 200, patched.text);
    assert.equal((patched.body.oauth as { authorized: boolean }).authorized, false);
    assert.equal(await grantOf(), null);
    const late = await request('POST', oauthPath(connectionId, 'callback'), owner.apiKey, { code: pending.code, state: pending.state });
    assert.equal(late.status, 400, late.text);
    assert.match(messageOf(late.body), /state is unknown/);
  });
});
