/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment -- the tests read JSON answers field by field */
/**
 * MCP connections (real PostgreSQL, the real API, real MCP servers from npm): created from a URL, a
 * stdio template or an imported `mcpServers` snippet; credentials sealed and write-only; owner-scoped;
 * stdio refused outside the operator's templates; discovery stores a bounded, cleaned snapshot;
 * bindings per chat with the legacy reasons; approvals recorded with the residency generation.
 */
import assert from 'node:assert/strict';
import { startTestApi, type TestApi } from '../../../support/api';
import { freshDatabase, type TestDatabase } from '../../../support/db';
import { createJob, createOwner, type TestOwner } from '../../../support/agent-records';
import { insertHost } from '../../../support/agent-rows';
import { startEverythingHttp, startHostileMcpServer, stdioTemplates, EVERYTHING_BIN, type RunningMcpServer } from '../../../support/mcp-servers';

const KEY = 'mcp-test-settings-encryption-key-of-32-bytes';
const TOKEN = 'secret-token-value-never-shown-0123456789';

describe('MCP connections, discovery, bindings and approvals (PostgreSQL, real MCP servers)', function () {
  this.timeout(90_000);
  let t: TestDatabase;
  let api: TestApi;
  let plainApi: TestApi;
  let owner: TestOwner;
  let other: TestOwner;
  let http: RunningMcpServer;
  let hostile: RunningMcpServer;

  const call = async (method: string, path: string, who: TestOwner, body?: unknown, base = api.url) => {
    const res = await fetch(`${base}${path}`, {
      method, headers: { authorization: `Bearer ${who.apiKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, text, body: (text ? JSON.parse(text) : {}) as Record<string, any> }; // eslint-disable-line @typescript-eslint/no-explicit-any -- test reads of JSON answers
  };
  const count = async () => Number((await t.db('agent_mcp_connections').count<{ count: string }[]>('* as count').first())?.count);

  before(async () => {
    t = await freshDatabase();
    [http, hostile] = await Promise.all([startEverythingHttp(), startHostileMcpServer()]);
    api = await startTestApi({ db: t.db, env: { AGENT_SETTINGS_ENCRYPTION_KEY: KEY, AGENT_MCP_ALLOW_PRIVATE_NETWORK: 'true', AGENT_MCP_STDIO_TEMPLATES: stdioTemplates() } });
    plainApi = await startTestApi({ db: t.db, env: {} });
    owner = await createOwner(t.db);
    other = await createOwner(t.db);
  });
  after(async () => {
    await api?.close();
    await plainApi?.close();
    await http?.close();
    await hostile?.close();
    await t?.drop();
  });

  it('creates a remote connection whose bearer token is sealed at rest and never shown', async () => {
    const created = await call('POST', '/v1/agent/mcp/connections', owner, { name: 'everything-http', url: http.url, auth: { type: 'bearer', token: TOKEN } });
    assert.equal(created.status, 201, created.text);
    assert.equal(created.body.transport, 'streamable_http');
    assert.equal(created.body.location, 'remote');
    assert.equal(created.body.auth_profile, 'bearer');
    assert.deepEqual(created.body.credentials, { configured: true, headers: ['Authorization'], env: [] });
    assert.ok(!created.text.includes(TOKEN));
    const listed = await call('GET', '/v1/agent/mcp/connections', owner);
    assert.ok(!listed.text.includes(TOKEN));
    const row = await t.db('agent_mcp_connections').where({ connection_id: created.body.connection_id }).first<{ credentials_sealed: string }>();
    assert.ok(row && !row.credentials_sealed.includes(TOKEN) && row.credentials_sealed.startsWith('v1.'));
  });

  it('is owner-scoped: another owner gets 404 on read, change, delete and discovery', async () => {
    const created = await call('POST', '/v1/agent/mcp/connections', owner, { name: 'mine', url: http.url });
    const path = `/v1/agent/mcp/connections/${created.body.connection_id}`;
    for (const [method, suffix, body] of [['GET', '', undefined], ['PATCH', '', { name: 'theirs' }], ['DELETE', '', undefined], ['POST', '/discover', {}]] as const) {
      assert.equal((await call(method, path + suffix, other, body)).status, 404, `${method} ${suffix}`);
    }
    assert.equal((await call('GET', path, owner)).body.name, 'mine');
    assert.equal((await call('DELETE', path, owner)).status, 200);
    assert.equal((await call('GET', path, owner)).status, 404);
  });

  it('refuses bad input with 400 and creates nothing', async () => {
    const before = await count();
    const bad: unknown[] = [
      { name: 'x', url: 'ftp://example.com/mcp' },
      { name: 'x', url: 'https://user:pw@example.com/mcp' },
      { name: 'bad name!', url: http.url },
      { name: 'x', url: http.url, stdio: { template: 'everything' } },
      { name: 'x', url: http.url, auth: { type: 'headers', headers: { 'Mcp-Session-Id': 'forged' } } },
      { name: 'x', url: http.url, auth: { type: 'bearer', token: 'a\r\nInjected: yes' } },
      { name: 'x', url: http.url, extra: true },
      { name: 'x', stdio: { template: 'not-approved' } },
      { name: 'x', stdio: { template: 'everything', env: { LD_PRELOAD: '/tmp/x.so' } } },
    ];
    for (const body of bad) assert.equal((await call('POST', '/v1/agent/mcp/connections', owner, body)).status, 400, JSON.stringify(body));
    const snippets: unknown[] = [
      { mcpServers: { evil: { command: '/bin/sh', args: ['-c', 'id'] } } },
      { mcpServers: { a: { url: http.url }, b: { command: 'npx', args: ['-y', 'some-server'] } } },
      { mcpServers: { old: { type: 'sse', url: http.url } } },
      { mcpServers: { a: { url: http.url, unknown: 1 } } },
      { mcpServers: {} },
      { mcpServers: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`s${i}`, { url: http.url }])) },
    ];
    for (const body of snippets) assert.equal((await call('POST', '/v1/agent/mcp/connections/import', owner, body)).status, 400, JSON.stringify(body));
    assert.equal(await count(), before, 'nothing was created');
  });

  it('refuses plain-http and loopback URLs unless the operator allows private networks, and credentials without a sealing key', async () => {
    const before = await count();
    assert.equal((await call('POST', '/v1/agent/mcp/connections', owner, { name: 'lo', url: http.url }, plainApi.url)).status, 400);
    const sealed = await call('POST', '/v1/agent/mcp/connections', owner, { name: 'tok', url: 'https://mcp.example.com/mcp', auth: { type: 'bearer', token: TOKEN } }, plainApi.url);
    assert.equal(sealed.status, 503);
    assert.equal(await count(), before);
  });

  it('imports an mcpServers snippet: a URL server and a stdio server equal to an approved template', async () => {
    const imported = await call('POST', '/v1/agent/mcp/connections/import', owner, {
      mcpServers: { remote: { type: 'http', url: http.url, headers: { 'X-Api-Key': TOKEN } }, local: { command: EVERYTHING_BIN, args: ['stdio'], env: { EVERYTHING_NOTE: 'n' } } },
    });
    assert.equal(imported.status, 201, imported.text);
    const [remote, local] = imported.body.connections as Array<Record<string, any>>; // eslint-disable-line @typescript-eslint/no-explicit-any -- JSON
    assert.equal(remote!.source, 'mcp_servers');
    assert.equal(remote!.auth_profile, 'headers');
    assert.deepEqual(local!.launch, { command: EVERYTHING_BIN, args: ['stdio'] });
    assert.equal(local!.template, 'everything');
    assert.deepEqual(local!.credentials.env, ['EVERYTHING_NOTE']);
    assert.ok(!imported.text.includes(TOKEN));
    const again = await call('POST', '/v1/agent/mcp/connections/import', owner, { mcpServers: { remote: { url: http.url } } });
    assert.equal(again.status, 409, 'a name is unique per owner');
  });

  it('discovers tools over stdio and streamable HTTP and stores the snapshot', async () => {
    for (const body of [{ name: 'ev-stdio', stdio: { template: 'everything' } }, { name: 'ev-http', url: http.url }]) {
      const created = await call('POST', '/v1/agent/mcp/connections', owner, body);
      const found = await call('POST', `/v1/agent/mcp/connections/${created.body.connection_id}/discover`, owner, {});
      assert.equal(found.status, 200, found.text);
      const names = (found.body.capabilities.tools as Array<{ name: string }>).map((tool) => tool.name);
      assert.ok(names.includes('echo') && names.includes('get-sum'), names.join());
      assert.ok(found.body.discovered_at);
      assert.equal(found.body.discovery_error, null);
    }
  });

  it('cleans an untrusted snapshot, and stores a discovery failure as 502 with its reason', async () => {
    const created = await call('POST', '/v1/agent/mcp/connections', owner, { name: 'hostile', url: hostile.url });
    const found = await call('POST', `/v1/agent/mcp/connections/${created.body.connection_id}/discover`, owner, {});
    assert.equal(found.status, 200, found.text);
    assert.equal(found.body.capabilities.tools[0].description, 'the hang tool\uFFFD', 'NUL replaced before PostgreSQL');
    const dead = await call('POST', '/v1/agent/mcp/connections', owner, { name: 'dead', url: 'http://127.0.0.1:9/mcp' });
    const failed = await call('POST', `/v1/agent/mcp/connections/${dead.body.connection_id}/discover`, owner, {});
    assert.equal(failed.status, 502);
    assert.ok((await call('GET', `/v1/agent/mcp/connections/${dead.body.connection_id}`, owner)).body.discovery_error);
  });

  it('binds connections to a chat, keeps unresolved names as legacy bindings, and records approvals with the generation', async () => {
    const jobId = await createJob(t.db, owner.userId);
    const a = await call('POST', '/v1/agent/mcp/connections', owner, { name: 'Dup', url: http.url });
    await call('POST', '/v1/agent/mcp/connections', owner, { name: 'dup', url: http.url });
    const bound = await call('PUT', `/v1/agent/mcp/chats/${jobId}/bindings`, owner, { connections: [a.body.connection_id], servers: ['nothing-here', 'DUP'] });
    assert.equal(bound.status, 200, bound.text);
    assert.deepEqual((bound.body.connections as Array<{ name: string }>).map((c) => c.name), ['Dup']);
    assert.deepEqual((bound.body.unresolved as Array<{ server_name: string; reason: string }>).map((u) => [u.server_name, u.reason]),
      [['DUP', 'ambiguous_connection'], ['nothing-here', 'no_connection']]);
    assert.equal((await call('PUT', `/v1/agent/mcp/chats/${jobId}/bindings`, other, { connections: [] })).status, 404);
    const theirs = await call('POST', '/v1/agent/mcp/connections', other, { name: 'theirs', url: http.url });
    assert.equal((await call('PUT', `/v1/agent/mcp/chats/${jobId}/bindings`, owner, { connections: [theirs.body.connection_id] })).status, 400);
    assert.equal((await call('GET', `/v1/agent/mcp/chats/${jobId}/bindings`, owner)).body.connections.length, 1, 'a refused change keeps the bindings');

    await insertHost(t.db, 'host-approvals');
    await t.db('agent_sandboxes').insert({ group_id: 'grp_approvals', host_id: 'host-approvals', container_name: 'sbx-approvals', generation: 4, state: 'running' });
    await t.db('agent_jobs').where({ job_id: jobId }).update({ group_id: 'grp_approvals' });
    const approved = await call('POST', `/v1/agent/mcp/chats/${jobId}/approvals`, owner, { connection_id: a.body.connection_id, tool: 'echo', decision: 'approve' });
    assert.equal(approved.status, 200, approved.text);
    assert.equal(approved.body.state, 'approved');
    assert.equal(approved.body.generation, 4);
  });
});
