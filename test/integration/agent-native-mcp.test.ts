/**
 * Codex CLI and Claude Code reach the chat's MCP tools (PostgreSQL, Temporal, Docker, gateway, a fake
 * chat upstream, `mcp-server-everything` over streamable HTTP on the host): each CLI's own MCP client
 * is configured with the tool relay's MCP endpoint through the model relay (the sandbox has no
 * network); the model calls an MCP tool, the relay calls the server with the attempt's residency
 * credential and records the call (once: the CLI's own report of it is dropped), and the tool's
 * answer reaches the model.
 */
import assert from 'node:assert/strict';
import { startAgentStack, ownerCall, AGENT_MODEL, type AgentStack } from '../support/agent-stack';
import type { Behaviour, RecordedRequest } from '../support/fake-upstream';
import { startEverythingHttp, type RunningMcpServer } from '../support/mcp-servers';
import { waitFor } from '../support/wait';

type Json = Record<string, unknown>;
interface TurnView { seq: number; state: string; result: string | null; error?: string }

const FINAL = 'Done with the MCP tool.';

function offered(request: RecordedRequest): string[] {
  const tools = ((request.body as Json | undefined)?.tools ?? []) as Json[];
  return tools.map((t) => (t.function as Json | undefined)?.name ?? t.name).filter((name): name is string => typeof name === 'string');
}

const finalText: Behaviour = { kind: 'dynamic', choose: (request) => ((request.body as Json | undefined)?.stream === true ? { kind: 'sse', pieces: [FINAL] } : { kind: 'json', content: FINAL }) };

/** The model calls the echo tool of connection `evhttp`, under whatever name the CLI offered it. */
function echoCall(message: string): Behaviour {
  return {
    kind: 'dynamic',
    choose: (request) => {
      const name = offered(request).find((n) => n.endsWith('evhttp__echo'));
      return name ? { kind: 'tool_call', id: 'call_mcp_echo', name, arguments: { message } } : { kind: 'status', status: 400, message: `no MCP echo tool offered: ${offered(request).join(', ')}` };
    },
  };
}

describe('native CLIs use the tool relay through the model relay (Codex CLI, Claude Code, real MCP server)', function () {
  this.timeout(400_000);
  let stack: AgentStack;
  let http: RunningMcpServer;
  let connectionId: string;

  const settled = (jobId: string, count: number) => waitFor(async () => {
    const list = ((await (await ownerCall(stack, 'GET', `/v1/agent/jobs/${jobId}`)).json()) as { turns: TurnView[] }).turns;
    return list.length === count && list.every((t) => ['completed', 'failed', 'cancelled'].includes(t.state)) ? list : undefined;
  }, `${count} settled turns`, 150_000);

  before(async () => {
    http = await startEverythingHttp();
    stack = await startAgentStack({
      modelFields: 'supports_tools: true, supported_params: [temperature, max_tokens, parallel_tool_calls]',
      env: { AGENT_SETTINGS_ENCRYPTION_KEY: 'native-mcp-settings-encryption-key-32-bytes', AGENT_MCP_ALLOW_PRIVATE_NETWORK: 'true' },
    });
    const created = await ownerCall(stack, 'POST', '/v1/agent/mcp/connections', { name: 'evhttp', url: http.url });
    connectionId = ((await created.json()) as { connection_id: string }).connection_id;
    assert.equal((await ownerCall(stack, 'POST', `/v1/agent/mcp/connections/${connectionId}/discover`, {})).status, 200);
  });
  after(async () => {
    await stack?.close();
    await http?.close();
  });

  for (const driver of ['codex', 'claude-code'] as const) {
    it(`${driver}: calls the chat's MCP tool through the relay, and the tool's answer reaches the model`, async () => {
      const relayHits = () => stack.api.logs.lines.filter((line) => line.path === '/v1/agent/mcp/relay/mcp').length;
      const hitsBefore = relayHits();
      stack.upstream.enqueue(finalText);
      const created = await ownerCall(stack, 'POST', '/v1/agent/jobs', { prompt: 'Say hello.', model: AGENT_MODEL, repo: null, driver });
      assert.equal(created.status, 201, await created.clone().text());
      const jobId = ((await created.json()) as { job_id: string }).job_id;
      assert.equal((await settled(jobId, 1))[0]!.state, 'completed');
      assert.equal(relayHits(), hitsBefore, 'a chat without MCP tools: the CLI is not configured with the relay\'s MCP endpoint');
      const bound = await fetch(`${stack.api.url}/v1/agent/mcp/chats/${jobId}/bindings`, {
        method: 'PUT', headers: { authorization: `Bearer ${stack.ownerKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ connections: [connectionId] }),
      });
      assert.equal(bound.status, 200);

      const before = stack.upstream.chatRequests().length;
      stack.upstream.enqueue(echoCall(`from ${driver}`), finalText);
      assert.equal((await ownerCall(stack, 'POST', `/v1/agent/jobs/${jobId}/turns`, { prompt: 'Use the echo tool.' })).status, 201);
      const [, second] = await settled(jobId, 2);
      assert.equal(second!.state, 'completed', `turn 2: ${second!.error ?? ''}`);
      assert.equal(second!.result, FINAL);

      const relayed = await stack.t.db('agent_events').where({ job_id: jobId, turn_seq: 2 }).whereRaw(`payload->>'tool_name' = 'evhttp__echo'`).orderBy('event_id')
        .select<Array<{ event_type: string; payload: Json; attempt_id: string | null }>>('event_type', 'payload', 'attempt_id');
      const use = relayed.find((e) => e.event_type === 'tool_use' && e.payload.via === 'mcp_relay');
      const result = relayed.find((e) => e.event_type === 'tool_result' && e.payload.output === `Echo: from ${driver}`);
      assert.ok(use && result, `the relay recorded the call (got ${JSON.stringify(relayed)}; offered ${JSON.stringify(stack.upstream.chatRequests().slice(before).map(offered))})`);
      assert.equal(result.payload.is_error, false);
      const toolEvents = await stack.t.db('agent_events').where({ job_id: jobId, turn_seq: 2 }).whereIn('event_type', ['tool_use', 'tool_result']).orderBy('event_id')
        .select<Array<{ event_type: string; payload: Json }>>('event_type', 'payload');
      assert.deepEqual(toolEvents.map((e) => [e.event_type, e.payload.tool_name, e.payload.via ?? null]), [['tool_use', 'evhttp__echo', 'mcp_relay'], ['tool_result', 'evhttp__echo', null]],
        'the call is in the event log once: the relay\'s record, not also the CLI\'s own');
      assert.ok(relayHits() > hitsBefore, 'the CLI spoke to the relay\'s MCP endpoint');
      const answered = stack.upstream.chatRequests().slice(before).map((r) => r.rawBody);
      assert.ok(answered.some((body) => body.includes(`Echo: from ${driver}`)), 'the tool\'s answer went back to the model');
    });
  }
});
