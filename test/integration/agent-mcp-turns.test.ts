/**
 * A real turn of the built-in driver with MCP tools (PostgreSQL, Temporal, Docker, the gateway with a
 * fake LLM upstream scripting the tool calls, and MCP servers from npm): the chat's bound
 * connections' tools are offered to the model as `<connection>__<tool>`, called through the tool
 * relay with the attempt's credential (`mcp-server-everything` over stdio and streamable HTTP,
 * `mcp-server-filesystem` over stdio), their results go back to the model, and the relay records
 * `tool_use`/`tool_result` events of the turn's attempt.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startAgentStack, ownerCall, AGENT_MODEL, type AgentStack } from '../support/agent-stack';
import { scripted, sentMessages } from '../support/scripted-conversation';
import { startEverythingHttp, stdioTemplates, type RunningMcpServer } from '../support/mcp-servers';
import { waitFor } from '../support/wait';

interface JobView {
  turns: Array<{ seq: number; state: string; result: string | null; error?: string }>;
}

describe('built-in driver turns with MCP tools through the relay (PostgreSQL, Temporal, Docker, real MCP servers)', function () {
  this.timeout(180_000);
  let stack: AgentStack;
  let http: RunningMcpServer;
  const filesDir = mkdtempSync(join(tmpdir(), 'mcp-files-'));

  const json = async (res: Response) => ({ status: res.status, body: (await res.json()) as Record<string, unknown> });
  const settled = (jobId: string, turns: number) => waitFor(async () => {
    const view = (await (await ownerCall(stack, 'GET', `/v1/agent/jobs/${jobId}`)).json()) as JobView;
    return view.turns.length === turns && view.turns.every((t) => ['completed', 'failed', 'cancelled'].includes(t.state)) ? view : undefined;
  }, `${turns} settled turns`, 90_000);

  before(async () => {
    writeFileSync(join(filesDir, 'notes.txt'), 'the filesystem server read this\n');
    http = await startEverythingHttp();
    stack = await startAgentStack({
      modelFields: 'supports_tools: true',
      env: {
        AGENT_SETTINGS_ENCRYPTION_KEY: 'mcp-turns-settings-encryption-key-32-bytes', AGENT_MCP_ALLOW_PRIVATE_NETWORK: 'true',
        AGENT_MCP_STDIO_TEMPLATES: stdioTemplates(filesDir),
      },
    });
  });
  after(async () => {
    await stack?.close();
    await http?.close();
  });

  it('offers the bound connections\' tools and runs them through the relay in a real turn', async () => {
    const ids: string[] = [];
    for (const body of [{ name: 'evstdio', stdio: { template: 'everything' } }, { name: 'evhttp', url: http.url }, { name: 'files', stdio: { template: 'filesystem' } }]) {
      const created = await json(await ownerCall(stack, 'POST', '/v1/agent/mcp/connections', body));
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const id = created.body.connection_id as string;
      assert.equal((await ownerCall(stack, 'POST', `/v1/agent/mcp/connections/${id}/discover`, {})).status, 200);
      ids.push(id);
    }
    stack.upstream.enqueue(scripted.finalText('Hello, no tools yet.'));
    const created = await json(await ownerCall(stack, 'POST', '/v1/agent/jobs', { prompt: 'hello', model: AGENT_MODEL, repo: null }));
    const jobId = created.body.job_id as string;
    assert.equal((await settled(jobId, 1)).turns[0]!.state, 'completed');
    const firstTools = (stack.upstream.requests.at(-1)!.body as { tools?: Array<{ function: { name: string } }> }).tools ?? [];
    assert.ok(!firstTools.some((tool) => tool.function.name.includes('__')), 'an unbound chat is offered no MCP tools');

    const bound = await fetch(`${stack.api.url}/v1/agent/mcp/chats/${jobId}/bindings`, {
      method: 'PUT', headers: { authorization: `Bearer ${stack.ownerKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ connections: ids }),
    });
    assert.equal(bound.status, 200);
    stack.upstream.enqueue(
      scripted.toolCall('evstdio__echo', { message: 'through stdio' }, 'call_echo'),
      scripted.toolCall('evhttp__get-sum', { a: 20, b: 22 }, 'call_sum'),
      scripted.toolCall('files__read_text_file', { path: join(filesDir, 'notes.txt') }, 'call_file'),
      scripted.toolCall('evstdio__echo', 'not json', 'call_bad'),
      scripted.finalText('Used three MCP tools.'),
    );
    assert.equal((await ownerCall(stack, 'POST', `/v1/agent/jobs/${jobId}/turns`, { prompt: 'use the tools' })).status, 201);
    const view = await settled(jobId, 2);
    assert.deepEqual([view.turns[1]!.state, view.turns[1]!.result], ['completed', 'Used three MCP tools.'], view.turns[1]!.error);

    const turnRequests = stack.upstream.requests.slice(-5);
    const offered = ((turnRequests[0]!.body as { tools: Array<{ function: { name: string } }> }).tools).map((tool) => tool.function.name);
    for (const name of ['bash', 'evstdio__echo', 'evhttp__get-sum', 'files__read_text_file']) assert.ok(offered.includes(name), `${name} offered`);
    const toolAnswers = sentMessages(turnRequests[4]!).filter((m) => m.role === 'tool').map((m) => m.content ?? '');
    assert.equal(toolAnswers.length, 4);
    assert.equal(toolAnswers[3], 'Invalid arguments for evstdio__echo: expected a JSON object.');
    assert.equal(toolAnswers[0], 'Echo: through stdio');
    assert.match(toolAnswers[1]!, /42/);
    assert.match(toolAnswers[2]!, /the filesystem server read this/);

    const events = await stack.t.db('agent_events').where({ job_id: jobId, turn_seq: 2 }).whereIn('event_type', ['tool_use', 'tool_result'])
      .orderBy('event_id').select<Array<{ event_type: string; payload: Record<string, unknown>; is_error: boolean; attempt_id: string | null }>>('event_type', 'payload', 'is_error', 'attempt_id');
    assert.deepEqual(events.map((e) => [e.event_type, e.payload.tool_use_id, e.is_error]), [
      ['tool_use', 'call_echo', false], ['tool_result', 'call_echo', false],
      ['tool_use', 'call_sum', false], ['tool_result', 'call_sum', false],
      ['tool_use', 'call_file', false], ['tool_result', 'call_file', false],
      ['tool_use', 'call_bad', false], ['tool_result', 'call_bad', true],
    ]);
    assert.ok(events.every((e) => e.attempt_id !== null));
  });
});
