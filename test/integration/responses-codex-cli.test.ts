/**
 * The real Codex CLI (issue 26) through `/v1/responses`, unchanged: `codex exec --json` with a
 * model provider whose `base_url` is the gateway. A scripted upstream answers the first call with
 * one call of Codex's own shell tool (writing a file in Codex's working directory) and the next
 * call with a final text. Run against a chat-completions route (the request translated) and a
 * Responses-API route (`upstream_api: responses`, the body relayed).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { CodexRuns, codexShellCall } from '../support/codex-cli';
import { startFakeResponsesUpstream, type FakeResponsesUpstream } from '../support/fake-responses-upstream';
import { startTestGateway, type TestGateway } from '../support/gateway';

type Json = Record<string, unknown>;

const FINAL_TEXT = 'The file is written.';

/** The shell tool Codex offered (chat `tools` or Responses `tools`), and the arguments that write `out.txt`. */
function shellCall(tools: Json[]): { name: string; arguments: string } {
  const call = codexShellCall(tools, 'echo from-codex > out.txt');
  assert.ok(call, `Codex offered a shell tool (offered: ${JSON.stringify(tools.map((t) => (t.function as Json | undefined)?.name ?? t.name))})`);
  return { name: call.name, arguments: JSON.stringify(call.arguments) };
}

interface ChatScript {
  url: string;
  bodies: Json[];
  close(): Promise<void>;
}

/** A chat-completions upstream: a streamed tool call first, then the final text. */
async function startChatScript(): Promise<ChatScript> {
  const bodies: Json[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString()) as Json;
      bodies.push(body);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const send = (delta: Json, finish: string | null = null) => res.write(`data: ${JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'up', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`);
      if (bodies.length === 1) {
        const call = shellCall((body.tools ?? []) as Json[]);
        send({ role: 'assistant', content: null, tool_calls: [{ index: 0, id: 'call_shell_1', type: 'function', function: { name: call.name, arguments: '' } }] });
        send({ tool_calls: [{ index: 0, function: { arguments: call.arguments.slice(0, 10) } }] });
        send({ tool_calls: [{ index: 0, function: { arguments: call.arguments.slice(10) } }] });
        send({}, 'tool_calls');
      } else {
        send({ role: 'assistant', content: FINAL_TEXT.slice(0, 8) });
        send({ content: FINAL_TEXT.slice(8) });
        send({}, 'stop');
      }
      res.write(`data: ${JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'up', choices: [], usage: { prompt_tokens: 100, completion_tokens: 10, total_tokens: 110 } })}\n\n`);
      res.end('data: [DONE]\n\n');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    bodies,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

function agentMessages(events: Json[]): string[] {
  return events.filter((e) => e.type === 'item.completed' && (e.item as Json).type === 'agent_message').map((e) => (e.item as Json).text as string);
}

function commandItems(events: Json[]): Json[] {
  return events.filter((e) => e.type === 'item.completed' && (e.item as Json).type === 'command_execution').map((e) => e.item as Json);
}

describe('integration: the real Codex CLI through /v1/responses', function () {
  this.timeout(180_000);
  const runs = new CodexRuns();
  let gw: TestGateway | undefined;
  let chat: ChatScript | undefined;
  let responses: FakeResponsesUpstream | undefined;

  afterEach(async () => {
    runs.killAll();
    await gw?.close();
    await chat?.close();
    await responses?.close();
    gw = undefined;
    chat = undefined;
    responses = undefined;
  });
  after(() => runs.killAll());

  it('runs a shell tool call and a final answer through a chat-completions route', async () => {
    chat = await startChatScript();
    gw = await startTestGateway({
      modelsYaml: `models:\n  - { id: codex-model, name: Codex, provider: generic_compat, base_url: "${chat.url}", supports_tools: true, supported_params: [temperature, max_tokens, parallel_tool_calls] }\n`,
    });
    const run = await runs.run({ gatewayUrl: gw.url, apiKey: 'sk-gateway-test', model: 'codex-model', prompt: 'Write from-codex into out.txt.' });
    assert.equal(run.code, 0, `codex exited ${run.code}: ${run.stderr.slice(-2000)}\n${run.stdout.slice(-2000)}`);
    assert.equal(readFileSync(join(run.workdir, 'out.txt'), 'utf8').trim(), 'from-codex');
    assert.equal(commandItems(run.events).length, 1, 'one command ran');
    assert.deepEqual(agentMessages(run.events), [FINAL_TEXT]);
    assert.equal(chat.bodies.length, 2);
    const second = chat.bodies[1]!.messages as Json[];
    const toolResult = second.find((m) => m.role === 'tool');
    assert.ok(toolResult, 'the second call carries the tool result');
    assert.equal(toolResult.tool_call_id, 'call_shell_1');
    const assistant = second.find((m) => Array.isArray(m.tool_calls)) as Json;
    assert.equal(((assistant.tool_calls as Json[])[0]!.function as Json).name, shellCall(chat.bodies[0]!.tools as Json[]).name);
    assert.match(String(toolResult.content), /exited with code 0/);
  });

  it('runs a shell tool call and a final answer through a Responses-API route, the body relayed', async () => {
    responses = await startFakeResponsesUpstream();
    responses.script((request, n) => {
      if (n === 1) {
        const call = shellCall((request.body.tools ?? []) as Json[]);
        return { output: [{ type: 'function_call', id: 'fc_up_1', call_id: 'call_shell_1', name: call.name, arguments: call.arguments }], byteSlices: 7 };
      }
      return { output: [{ type: 'message', id: 'msg_up_2', role: 'assistant', content: [{ type: 'output_text', text: FINAL_TEXT, annotations: [] }] }], usage: { input_tokens: 300, output_tokens: 7, cached_tokens: 100 } };
    });
    gw = await startTestGateway({
      modelsYaml: `models:\n  - { id: codex-model, name: Codex, provider: generic_compat, base_url: "${responses.url}", provider_model_id: upstream-model, upstream_api: responses }\n`,
    });
    const run = await runs.run({ gatewayUrl: gw.url, apiKey: 'sk-gateway-test', model: 'codex-model', prompt: 'Write from-codex into out.txt.' });
    assert.equal(run.code, 0, `codex exited ${run.code}: ${run.stderr.slice(-2000)}\n${run.stdout.slice(-2000)}`);
    assert.equal(readFileSync(join(run.workdir, 'out.txt'), 'utf8').trim(), 'from-codex');
    assert.equal(commandItems(run.events).length, 1, 'one command ran');
    assert.deepEqual(agentMessages(run.events), [FINAL_TEXT]);
    assert.equal(responses.requests.length, 2);
    const [first, second] = responses.requests as [typeof responses.requests[0], typeof responses.requests[0]];
    assert.equal(first.path, '/v1/responses');
    assert.equal(first.body.model, 'upstream-model', 'the route\'s upstream id replaces the model');
    assert.ok((first.body.tools as Json[]).some((t) => t.type === 'namespace' || t.type === 'web_search'), 'Codex\'s tools reach the upstream as they are');
    const output = (second.body.input as Json[]).find((i) => i.type === 'function_call_output');
    assert.ok(output, 'the second call carries the tool result');
    assert.equal(output.call_id, 'call_shell_1');
    assert.match(String(output.output), /exited with code 0/);
    const turn = run.events.find((e) => e.type === 'turn.completed');
    assert.ok(turn, 'the turn completed');
  });
});
