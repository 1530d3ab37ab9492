/**
 * The tool relay and its credentials (real PostgreSQL, the real API, MCP servers from npm and a
 * hostile one on loopback): a host fetches an attempt's `mcp_…` token and `amr.…` residency
 * credential; both reach the chat's bound tools (JSON API and the MCP endpoint, with the official
 * SDK client) while the attempt runs, and nothing else; every rule that ends them is table-tested;
 * hung, oversized and malformed answers are bounded without harming the relay or another chat.
 */
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startTestApi, type TestApi } from '../../../support/api';
import { freshDatabase, type TestDatabase } from '../../../support/db';
import { insertResidency, type Residency } from '../../../support/agent-grants';
import { createOwner, type TestOwner } from '../../../support/agent-records';
import { newId } from '../../../../agent/jobs/job-store';
import { startEverythingHttp, startHostileMcpServer, stdioTemplates, type RunningMcpServer } from '../../../support/mcp-servers';
import { methodsToWalk } from '../../../support/walked-methods';

const KEY = 'mcp-relay-settings-encryption-key-of-32-bytes';
const CANARY = 'relay-canary-secret-of-the-api-process';

describe('the tool relay and its attempt-fenced credentials (PostgreSQL, real MCP servers)', function () {
  this.timeout(120_000);
  let t: TestDatabase;
  let api: TestApi;
  let owner: TestOwner;
  let http: RunningMcpServer;
  let hostile: RunningMcpServer;
  const connections: Record<string, string> = {};
  let hosts = 0;

  const request = async (method: string, path: string, token: string, body?: unknown) => {
    const res = await fetch(`${api.url}${path}`, {
      method, headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, text, body: (text.startsWith('{') ? JSON.parse(text) : {}) as Record<string, any> }; // eslint-disable-line @typescript-eslint/no-explicit-any -- JSON
  };
  const credentialsOf = (r: Residency) => request('POST', `/v1/agent/hosts/${r.hostId}/attempts/${r.attemptId}/tool-credentials`, r.hostCredential, {});
  const callTool = (token: string, tool: string, args: Record<string, unknown> = {}) => request('POST', '/v1/agent/mcp/relay/call', token, { tool, arguments: args });
  /** A running attempt of a new chat of the owner, bound to `names`, with its relay credentials. */
  const chat = async (names: string[]) => {
    hosts += 1;
    const residency = await insertResidency(t.db, { ownerId: owner.userId, model: 'm', hostId: `relay-host-${hosts}` });
    await request('PUT', `/v1/agent/mcp/chats/${residency.jobId}/bindings`, owner.apiKey, { connections: names.map((n) => connections[n]) });
    const issued = await credentialsOf(residency);
    assert.equal(issued.status, 200, issued.text);
    return { residency, mcp: issued.body.mcp_token as string, amr: issued.body.residency_credential as string };
  };
  const events = (jobId: string) => t.db('agent_events').where({ job_id: jobId }).orderBy('event_id').select<Array<{ event_type: string; attempt_id: string; payload: Record<string, unknown>; is_error: boolean }>>('event_type', 'attempt_id', 'payload', 'is_error');

  before(async () => {
    process.env.MCP_RELAY_TEST_CANARY = CANARY;
    t = await freshDatabase();
    [http, hostile] = await Promise.all([startEverythingHttp(), startHostileMcpServer()]);
    api = await startTestApi({
      db: t.db,
      env: {
        AGENT_SETTINGS_ENCRYPTION_KEY: KEY, AGENT_MCP_ALLOW_PRIVATE_NETWORK: 'true', AGENT_MCP_STDIO_TEMPLATES: stdioTemplates(),
        AGENT_MCP_CALL_TIMEOUT_SECONDS: '3', AGENT_MCP_APPROVAL_WAIT_SECONDS: '30', AGENT_MCP_MAX_ANSWER_BYTES: String(1024 * 1024),
      },
    });
    owner = await createOwner(t.db);
    const specs: Record<string, unknown> = {
      evstdio: { stdio: { template: 'everything', env: { EVERYTHING_NOTE: 'note-for-the-program' } } },
      evhttp: { url: http.url, auth: { type: 'bearer', token: 'upstream-token-0123456789' } },
      hostile: { url: hostile.url },
      guarded: { url: http.url, approval_policy: 'required' },
    };
    for (const [name, spec] of Object.entries(specs)) {
      const created = await request('POST', '/v1/agent/mcp/connections', owner.apiKey, { name, ...(spec as object) });
      assert.equal(created.status, 201, created.text);
      connections[name] = created.body.connection_id as string;
      assert.equal((await request('POST', `/v1/agent/mcp/connections/${connections[name]}/discover`, owner.apiKey, {})).status, 200);
    }
  });
  after(async () => {
    delete process.env.MCP_RELAY_TEST_CANARY;
    await api?.close();
    await http?.close();
    await hostile?.close();
    await t?.drop();
  });

  it('issues credentials to the attempt\'s host only, for a current attempt', async () => {
    const { residency } = await chat([]);
    assert.equal((await request('POST', `/v1/agent/hosts/${residency.hostId}/attempts/${residency.attemptId}/tool-credentials`, 'ahc_wrong', {})).status, 401);
    await t.db('agent_attempts').where({ attempt_id: residency.attemptId }).update({ state: 'completed' });
    assert.equal((await credentialsOf(residency)).status, 409);
  });

  it('lists and calls the chat\'s tools with either credential, over stdio and streamable HTTP, recording tool_use and tool_result', async () => {
    const c = await chat(['evstdio', 'evhttp']);
    for (const token of [c.mcp, c.amr]) {
      const tools = await request('GET', '/v1/agent/mcp/relay/tools', token);
      assert.equal(tools.status, 200, tools.text);
      const names = (tools.body.tools as Array<{ name: string }>).map((tool) => tool.name);
      assert.ok(names.includes('evstdio__echo') && names.includes('evhttp__get-sum'), names.join());
    }
    const echoed = await callTool(c.mcp, 'evstdio__echo', { message: 'over stdio' });
    assert.deepEqual([echoed.status, echoed.body.output, echoed.body.is_error], [200, 'Echo: over stdio', false]);
    const sum = await callTool(c.amr, 'evhttp__get-sum', { a: 2, b: 3 });
    assert.equal(sum.status, 200, sum.text);
    assert.match(sum.body.output as string, /5/);
    const recorded = await events(c.residency.jobId);
    assert.deepEqual(recorded.map((e) => [e.event_type, String(e.payload.tool_name), e.attempt_id]), [
      ['tool_use', 'evstdio__echo', c.residency.attemptId], ['tool_result', 'evstdio__echo', c.residency.attemptId],
      ['tool_use', 'evhttp__get-sum', c.residency.attemptId], ['tool_result', 'evhttp__get-sum', c.residency.attemptId],
    ]);
    assert.deepEqual(recorded[0]!.payload.input, { message: 'over stdio' });
    assert.equal((await callTool(c.mcp, 'evstdio__no-such-tool')).status, 404);
    assert.equal((await events(c.residency.jobId)).length, 4, 'an unknown tool records nothing');
  });

  it('launches a stdio template with a minimal environment: the owner\'s allowed value, none of the API process\'s', async () => {
    const c = await chat(['evstdio']);
    const env = await callTool(c.mcp, 'evstdio__get-env');
    assert.equal(env.status, 200, env.text);
    assert.match(env.body.output as string, /note-for-the-program/);
    assert.ok(!(env.body.output as string).includes(CANARY), 'no variable of the API process reaches the program');
    assert.ok(!(env.body.output as string).includes('DATABASE_URL'));
  });

  it('serves the same tools on the MCP endpoint to the official SDK client', async () => {
    const c = await chat(['evhttp']);
    const client = new Client({ name: 'test-cli', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${api.url}/v1/agent/mcp/relay/mcp`), { requestInit: { headers: { authorization: `Bearer ${c.amr}` } } }));
    const tools = await client.listTools();
    assert.ok(tools.tools.some((tool) => tool.name === 'evhttp__echo'));
    const answer = await client.callTool({ name: 'evhttp__echo', arguments: { message: 'via mcp' } });
    assert.deepEqual(answer.content, [{ type: 'text', text: 'Echo: via mcp' }]);
    await client.close();
    const refused = await fetch(`${api.url}/v1/agent/mcp/relay/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: '{}' });
    assert.equal(refused.status, 401);
  });

  const rules: Array<[string, (c: Awaited<ReturnType<typeof chat>>) => Promise<unknown>, { mcp: number; amr: number }]> = [
    ['the attempt finished (between turns)', async (c) => {
      await t.db('agent_attempts').where({ attempt_id: c.residency.attemptId }).update({ state: 'completed' });
      await t.db('agent_turns').where({ turn_id: c.residency.turnId }).update({ state: 'completed' });
    }, { mcp: 401, amr: 401 }],
    ['the owner stopped the turn', (c) => t.db('agent_turns').where({ turn_id: c.residency.turnId }).update({ state: 'cancelled' }), { mcp: 401, amr: 401 }],
    ['the credentials expired', (c) => t.db('agent_mcp_credentials').where({ job_id: c.residency.jobId }).update({ expires_at: t.db.raw(`now() - interval '1 second'`) }), { mcp: 401, amr: 401 }],
    ['the host stopped heartbeating', (c) => t.db('agent_hosts').where({ host_id: c.residency.hostId }).update({ last_heartbeat_at: t.db.raw(`now() - interval '1 hour'`) }), { mcp: 401, amr: 401 }],
    ['the host was removed', (c) => t.db('agent_hosts').where({ host_id: c.residency.hostId }).update({ removed_at: t.db.fn.now() }), { mcp: 401, amr: 401 }],
    ['the sandbox was recreated (new generation)', (c) => t.db('agent_sandboxes').where({ group_id: c.residency.groupId }).update({ generation: 4 }), { mcp: 401, amr: 401 }],
    ['the chat was deleted', (c) => t.db('agent_jobs').where({ job_id: c.residency.jobId }).update({ deleted_at: t.db.fn.now() }), { mcp: 401, amr: 401 }],
    ['the credentials were rotated', async (c) => assert.equal((await credentialsOf(c.residency)).status, 200), { mcp: 401, amr: 401 }],
  ];
  for (const [what, change, expected] of rules) {
    it(`refuses both credentials on the very next call once ${what}`, async () => {
      const c = await chat(['evhttp']);
      assert.equal((await callTool(c.mcp, 'evhttp__echo', { message: 'before' })).status, 200);
      await change(c);
      assert.equal((await callTool(c.mcp, 'evhttp__echo', { message: 'after' })).status, expected.mcp, 'mcp token');
      assert.equal((await callTool(c.amr, 'evhttp__echo', { message: 'after' })).status, expected.amr, 'residency credential');
      assert.equal((await request('GET', '/v1/agent/mcp/relay/tools', c.amr)).status, expected.amr);
    });
  }

  it('moves the residency credential to the chat\'s next attempt in the same residency, while the old mcp token stays dead', async () => {
    const c = await chat(['evhttp']);
    await t.db('agent_attempts').where({ attempt_id: c.residency.attemptId }).update({ state: 'completed' });
    await t.db('agent_turns').where({ turn_id: c.residency.turnId }).update({ state: 'completed' });
    const turnId = newId('turn');
    const attemptId = newId('att');
    await t.db('agent_turns').insert({ turn_id: turnId, job_id: c.residency.jobId, seq: 2, prompt: 'p2', state: 'running', attempt_id: attemptId });
    await t.db('agent_attempts').insert({ attempt_id: attemptId, turn_id: turnId, job_id: c.residency.jobId, host_id: c.residency.hostId, state: 'running', generation: 3 });
    assert.equal((await callTool(c.mcp, 'evhttp__echo', { message: 'x' })).status, 401);
    const moved = await callTool(c.amr, 'evhttp__echo', { message: 'turn two' });
    assert.equal(moved.status, 200, moved.text);
    const last = (await events(c.residency.jobId)).at(-1)!;
    assert.deepEqual([last.event_type, last.attempt_id], ['tool_result', attemptId]);
  });

  it('cannot write the event log, upload anything or end a job: every other route refuses both credentials', async () => {
    const c = await chat(['evhttp']);
    const ids: Record<string, string> = {
      hostId: c.residency.hostId, attemptId: c.residency.attemptId, jobId: c.residency.jobId, seq: '1', requestId: 'r1', groupId: c.residency.groupId,
      connectionId: connections.evhttp!, connectorId: 'mcpk_aaaaaaaaaaaaaaaaaaaa', name: 'X', host: c.residency.hostId, allocation_id: 'a1', eventId: '1',
    };
    const failures: string[] = [];
    for (const route of api.routes.filter((r) => r.access !== 'relay' && r.access !== 'public')) {
      const path = route.path.replace(/:(\w+)(\([^)]*\))?/g, (_m, name: string) => ids[name] ?? 'x1');
      for (const method of methodsToWalk(route)) {
        for (const token of [c.mcp, c.amr]) {
          const answer = await request(method, path, token, method === 'GET' || method === 'DELETE' ? undefined : { events: [{ seq: 0, event_type: 'message', payload: { text: 'forged' } }] });
          if (![401, 403].includes(answer.status)) failures.push(`${method} ${path}: ${answer.status}`);
        }
      }
    }
    assert.deepEqual(failures, []);
    assert.equal((await events(c.residency.jobId)).length, 0, 'nothing was written to the event log');
    const attempt = await t.db('agent_attempts').where({ attempt_id: c.residency.attemptId }).first<{ state: string }>('state');
    assert.equal(attempt?.state, 'running', 'the attempt was not ended');
  });

  it('cuts a hung call at its deadline as a tool_result error, while another chat on the same server is answered', async () => {
    const slow = await chat(['hostile']);
    const other = await chat(['hostile']);
    let hungSettled = false;
    const hung = callTool(slow.mcp, 'hostile__hang').finally(() => { hungSettled = true; });
    const fine = await callTool(other.mcp, 'hostile__fine');
    assert.deepEqual([fine.status, fine.body.output], [200, 'fine']);
    assert.equal(hungSettled, false, 'the other chat was answered while the hung call still waited');
    const cut = await hung;
    assert.equal(cut.status, 200, cut.text);
    assert.equal(cut.body.is_error, true);
    assert.match(cut.body.output as string, /did not finish within 3 s/);
    const last = (await events(slow.residency.jobId)).at(-1)!;
    assert.deepEqual([last.event_type, last.is_error], ['tool_result', true]);
  });

  it('rejects oversized, malformed and non-JSON answers as tool_result errors, and keeps serving', async () => {
    const c = await chat(['hostile']);
    for (const tool of ['huge', 'malformed', 'garbage']) {
      const answer = await callTool(c.mcp, `hostile__${tool}`);
      assert.equal(answer.status, 200, `${tool}: ${answer.text.slice(0, 200)}`);
      assert.equal(answer.body.is_error, true, tool);
      assert.ok((answer.body.output as string).length < 2000, `${tool}: the answer is not passed on`);
    }
    assert.deepEqual((await callTool(c.mcp, 'hostile__fine')).body.output, 'fine');
  });

  /** The chat's pending approvals, once the relay has asked for one. */
  const pendingApprovals = async (jobId: string): Promise<Array<Record<string, unknown>>> => {
    for (;;) {
      const listed = (await request('GET', `/v1/agent/mcp/chats/${jobId}/approvals?pending=true`, owner.apiKey)).body.approvals as Array<Record<string, unknown>>;
      if (listed.length > 0) return listed;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  };

  it('waits for the owner\'s approval, then re-checks the attempt before answering', async () => {
    const c = await chat(['guarded']);
    const waiting = callTool(c.mcp, 'guarded__echo', { message: 'approved call' });
    const pending = await pendingApprovals(c.residency.jobId);
    assert.deepEqual([pending[0]!.tool, pending[0]!.generation], ['echo', 3]);
    await request('POST', `/v1/agent/mcp/chats/${c.residency.jobId}/approvals`, owner.apiKey, { connection_id: connections.guarded, tool: 'echo', decision: 'approve' });
    const answer = await waiting;
    assert.deepEqual([answer.status, answer.body.output], [200, 'Echo: approved call']);

    const d = await chat(['guarded']);
    const stale = callTool(d.mcp, 'guarded__get-sum', { a: 1, b: 1 });
    await pendingApprovals(d.residency.jobId);
    await t.db('agent_attempts').where({ attempt_id: d.residency.attemptId }).update({ state: 'abandoned' });
    await request('POST', `/v1/agent/mcp/chats/${d.residency.jobId}/approvals`, owner.apiKey, { connection_id: connections.guarded, tool: 'get-sum', decision: 'approve' });
    assert.equal((await stale).status, 401, 'the attempt ended during the wait: nothing is answered');
  });
});
