/**
 * Connectors (real PostgreSQL, the real API and relay, `mcp-server-everything`): a user's machine
 * registration with a secret returned once and stored as a digest; rename and revoke; views say
 * `runtime: "unavailable"`; only a stdio connection can be bound, and a bound connection is refused
 * at use (listed unavailable, a call is a `tool_result` error).
 */
import assert from 'node:assert/strict';
import { startTestApi, type TestApi } from '../../../support/api';
import { freshDatabase, type TestDatabase } from '../../../support/db';
import { insertResidency } from '../../../support/agent-grants';
import { createOwner, type TestOwner } from '../../../support/agent-records';
import { hashSecret } from '../../../../lib/crypto';
import { stdioTemplates } from '../../../support/mcp-servers';

interface Answer {
  status: number;
  text: string;
  body: Record<string, unknown>;
}

describe('MCP connectors (PostgreSQL, the relay)', function () {
  this.timeout(60_000);
  let t: TestDatabase;
  let api: TestApi;
  let owner: TestOwner;
  let other: TestOwner;

  const call = async (method: string, path: string, token: string, body?: unknown): Promise<Answer> => {
    const res = await fetch(`${api.url}${path}`, {
      method, headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, text, body: (text ? JSON.parse(text) : {}) as Record<string, unknown> };
  };

  before(async () => {
    t = await freshDatabase();
    api = await startTestApi({ db: t.db, env: { AGENT_SETTINGS_ENCRYPTION_KEY: 'connector-test-encryption-key-of-32-bytes', AGENT_MCP_ALLOW_PRIVATE_NETWORK: 'true', AGENT_MCP_STDIO_TEMPLATES: stdioTemplates() } });
    owner = await createOwner(t.db);
    other = await createOwner(t.db);
  });
  after(async () => {
    await api?.close();
    await t?.drop();
  });

  it('registers with a once-returned secret stored as a digest, renames, revokes, and reports runtime unavailable', async () => {
    const registered = await call('POST', '/v1/agent/mcp/connectors', owner.apiKey, { name: 'my laptop' });
    assert.equal(registered.status, 201, registered.text);
    const secret = registered.body.secret as string;
    assert.match(secret, /^mcpk_/);
    assert.equal(registered.body.runtime, 'unavailable');
    const id = registered.body.connector_id as string;
    const row = await t.db('agent_mcp_connectors').where({ connector_id: id }).first<{ secret_hash: string }>();
    assert.equal(row?.secret_hash, hashSecret(secret));
    const read = await call('GET', `/v1/agent/mcp/connectors/${id}`, owner.apiKey);
    assert.ok(!read.text.includes(secret) && !(await call('GET', '/v1/agent/mcp/connectors', owner.apiKey)).text.includes(secret), 'the secret is never shown again');
    assert.equal(read.body.runtime, 'unavailable');
    assert.equal((await call('PATCH', `/v1/agent/mcp/connectors/${id}`, owner.apiKey, { name: 'work laptop' })).body.name, 'work laptop');
    assert.equal((await call('GET', `/v1/agent/mcp/connectors/${id}`, other.apiKey)).status, 404);
    assert.equal((await call('POST', `/v1/agent/mcp/connectors/${id}/revoke`, other.apiKey, {})).status, 404);
    assert.equal((await call('PATCH', `/v1/agent/mcp/connectors/${id}`, owner.apiKey, { name: '' })).status, 400);
    const revoked = await call('POST', `/v1/agent/mcp/connectors/${id}/revoke`, owner.apiKey, {});
    assert.deepEqual([revoked.body.state, revoked.body.runtime], ['revoked', 'unavailable']);
  });

  it('refuses binding a remote connection or a revoked connector, and refuses a bound connection at use', async () => {
    const connector = (await call('POST', '/v1/agent/mcp/connectors', owner.apiKey, { name: 'desk' })).body.connector_id as string;
    const remote = (await call('POST', '/v1/agent/mcp/connections', owner.apiKey, { name: 'remote', url: 'http://127.0.0.1:9/mcp' })).body.connection_id as string;
    const bindRemote = await call('PUT', `/v1/agent/mcp/connectors/${connector}/connections/${remote}`, owner.apiKey, {});
    assert.equal(bindRemote.status, 400, bindRemote.text);
    assert.equal((await call('PATCH', `/v1/agent/mcp/connections/${remote}`, owner.apiKey, { connector_id: connector })).status, 400);

    const local = (await call('POST', '/v1/agent/mcp/connections', owner.apiKey, { name: 'local', stdio: { template: 'everything' } })).body.connection_id as string;
    assert.equal((await call('POST', `/v1/agent/mcp/connections/${local}/discover`, owner.apiKey, {})).status, 200);
    const bound = await call('PUT', `/v1/agent/mcp/connectors/${connector}/connections/${local}`, owner.apiKey, {});
    assert.deepEqual([bound.status, bound.body.location, bound.body.connector_id], [200, 'connector', connector]);
    assert.equal((await call('POST', `/v1/agent/mcp/connections/${local}/discover`, owner.apiKey, {})).status, 409, 'discovery is refused too');

    const residency = await insertResidency(t.db, { ownerId: owner.userId, model: 'm', hostId: 'connector-host' });
    await call('PUT', `/v1/agent/mcp/chats/${residency.jobId}/bindings`, owner.apiKey, { connections: [local] });
    const token = (await call('POST', `/v1/agent/hosts/${residency.hostId}/attempts/${residency.attemptId}/tool-credentials`, residency.hostCredential, {})).body.mcp_token as string;
    const tools = await call('GET', '/v1/agent/mcp/relay/tools', token);
    assert.deepEqual(tools.body.tools, []);
    assert.match(JSON.stringify(tools.body.unavailable), /bound to a connector/);
    const refused = await call('POST', '/v1/agent/mcp/relay/call', token, { tool: 'local__echo', arguments: { message: 'x' } });
    assert.deepEqual([refused.status, refused.body.is_error], [200, true]);
    assert.match(refused.body.output as string, /bound to a connector/);
    const result = await t.db('agent_events').where({ job_id: residency.jobId, event_type: 'tool_result' }).first<{ is_error: boolean }>('is_error');
    assert.equal(result?.is_error, true);

    const unbound = await call('DELETE', `/v1/agent/mcp/connectors/${connector}/connections/${local}`, owner.apiKey);
    assert.deepEqual([unbound.body.location, unbound.body.connector_id], ['control_plane', null]);
    const echoed = await call('POST', '/v1/agent/mcp/relay/call', token, { tool: 'local__echo', arguments: { message: 'back' } });
    assert.deepEqual([echoed.body.output, echoed.body.is_error], ['Echo: back', false]);

    await call('POST', `/v1/agent/mcp/connectors/${connector}/revoke`, owner.apiKey, {});
    assert.equal((await call('PUT', `/v1/agent/mcp/connectors/${connector}/connections/${local}`, owner.apiKey, {})).status, 409);
  });
});
