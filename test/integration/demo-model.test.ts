/**
 * The demo model through a real gateway (docs/demo-model.md): the demo upstream (a real HTTP
 * server on loopback) behind the bundled config/demo-models.yaml, called with the official
 * clients: `openai` for chat (plain, streamed, a tool-call round trip) and embeddings (the
 * client's default base64 and floats), `@anthropic-ai/sdk` on the messages surface (plain and
 * streamed, through the gateway's translation); `/v1/models` and the admin routing view mark both
 * models `demo: true`;
 * odd bodies sent straight to the demo upstream get a 4xx JSON error and it keeps serving.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { DEMO_MODELS_FILE, startDemoModelIfWanted } from '../../ops/dev/demo-model';
import { loadSettings } from '../../lib/settings';
import { DEMO_LABEL } from '../../ops/dev/demo-script';
import { MAX_BODY_BYTES, hashVector, startDemoUpstream, type DemoUpstream } from '../../ops/dev/demo-upstream';
import { admin, ADMIN_TOKEN } from '../support/admin';
import { freshDatabase, type TestDatabase } from '../support/db';
import { startTestGateway, type TestGateway } from '../support/gateway';

describe('demo model: the demo upstream behind the gateway, with the official clients', function () {
  this.timeout(30_000);
  let demo: DemoUpstream;
  let t: TestDatabase;
  let gw: TestGateway;
  let openai: OpenAI;
  let anthropic: Anthropic;

  before(async () => {
    demo = await startDemoUpstream(0);
    t = await freshDatabase();
    gw = await startTestGateway({ db: t.db, modelsYaml: readFileSync(DEMO_MODELS_FILE, 'utf8'), env: { DEMO_MODEL_URL: demo.url, ADMIN_TOKEN } });
    openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    anthropic = new Anthropic({ baseURL: gw.url, apiKey: 'unused', maxRetries: 0 });
  });
  after(async () => {
    await gw?.close();
    await demo?.close();
    await t?.drop();
  });

  it('the admin routing view marks the demo models too', async () => {
    const res = await admin<{ models: Array<Record<string, unknown>> }>(gw, 'GET', '/admin/routing');
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body.models.map((m) => [m.id, m.demo]), [['demo', true], ['demo-embedding', true]]);
  });

  it('/v1/models lists demo and demo-embedding with demo: true and the labelled name', async () => {
    const body = (await (await fetch(`${gw.url}/v1/models`)).json()) as { data: Array<Record<string, unknown>> };
    const byId = new Map(body.data.map((m) => [m.id, m]));
    assert.equal(byId.get('demo')?.demo, true);
    assert.equal(byId.get('demo')?.name, DEMO_LABEL);
    assert.equal(byId.get('demo-embedding')?.demo, true);
    assert.equal(byId.get('demo-embedding')?.model_type, 'embedding');
  });

  it('chat with the openai client: the same labelled answer plain and streamed, with usage', async () => {
    const plain = await openai.chat.completions.create({ model: 'demo', messages: [{ role: 'user', content: 'Say hi' }] });
    const answer = plain.choices[0]!.message.content!;
    assert.ok(answer.startsWith(DEMO_LABEL), answer);
    assert.match(answer, /You said: "Say hi"/);
    assert.ok(plain.usage!.prompt_tokens > 0 && plain.usage!.completion_tokens > 0);
    const stream = await openai.chat.completions.create({ model: 'demo', messages: [{ role: 'user', content: 'Say hi' }], stream: true, stream_options: { include_usage: true } });
    let streamed = '';
    let chunks = 0;
    let usage: OpenAI.CompletionUsage | undefined | null;
    for await (const chunk of stream) {
      chunks += 1;
      streamed += chunk.choices[0]?.delta.content ?? '';
      usage = chunk.usage ?? usage;
    }
    assert.equal(streamed, answer);
    assert.ok(chunks > 3, `streamed in pieces (${chunks} chunks)`);
    assert.equal(usage?.completion_tokens, plain.usage!.completion_tokens);
  });

  it('a tool-call round trip with the openai client, streamed: write_file, then bash, then the answer', async () => {
    const tools: OpenAI.ChatCompletionTool[] = ['write_file', 'bash'].map((name) => ({ type: 'function', function: { name, parameters: { type: 'object', properties: {} } } }));
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Create hello.txt saying hi' }];
    const names: string[] = [];
    for (let i = 0; i < 3; i += 1) {
      const final = await openai.chat.completions.stream({ model: 'demo', messages, tools }).finalChatCompletion();
      const message = final.choices[0]!.message;
      if (!message.tool_calls?.length) {
        assert.match(message.content ?? '', /done\. The last tool result was: hi/);
        break;
      }
      const toolCall = message.tool_calls[0]!;
      names.push(toolCall.function.name);
      messages.push({ role: 'assistant', content: null, tool_calls: [toolCall] }, { role: 'tool', tool_call_id: toolCall.id, content: toolCall.function.name === 'bash' ? 'hi' : 'ok' });
    }
    assert.deepEqual(names, ['write_file', 'bash']);
  });

  it('embeddings with the openai client: deterministic unit vectors, base64 (the default) and floats agree', async () => {
    const first = await openai.embeddings.create({ model: 'demo-embedding', input: ['hello', 'world'] });
    const again = await openai.embeddings.create({ model: 'demo-embedding', input: ['hello', 'world'], encoding_format: 'float' });
    assert.equal(first.data.length, 2);
    const [a, b] = first.data.map((d) => d.embedding);
    assert.equal(a!.length, 64);
    assert.deepEqual(again.data[0]!.embedding, hashVector('hello', 64));
    assert.ok(a!.every((v, i) => Math.abs(v - again.data[0]!.embedding[i]!) < 1e-6), 'base64 decodes to the float vector');
    assert.notDeepEqual(a, b);
    assert.ok(Math.abs(Math.hypot(...a!) - 1) < 1e-6);
  });

  it('the messages surface with @anthropic-ai/sdk: plain and streamed give the labelled answer', async () => {
    const message = await anthropic.messages.create({ model: 'demo', max_tokens: 200, messages: [{ role: 'user', content: 'Say hi' }] });
    const block = message.content[0]!;
    assert.equal(block.type, 'text');
    const answer = (block).text;
    assert.ok(answer.startsWith(DEMO_LABEL), answer);
    const streamed = await anthropic.messages.stream({ model: 'demo', max_tokens: 200, messages: [{ role: 'user', content: 'Say hi' }] }).finalMessage();
    assert.equal((streamed.content[0] as Anthropic.TextBlock).text, answer);
    assert.ok(streamed.usage.output_tokens > 0);
  });

  it('the messages surface with tools: a tool_use block for the offered Write tool', async () => {
    const message = await anthropic.messages.create({
      model: 'demo', max_tokens: 200, system: 'Working directory: /workspace',
      tools: [{ name: 'Write', input_schema: { type: 'object' } }, { name: 'Bash', input_schema: { type: 'object' } }],
      messages: [{ role: 'user', content: 'Create hello.txt saying hi' }],
    });
    const use = message.content.find((c): c is Anthropic.ToolUseBlock => c.type === 'tool_use');
    assert.equal(message.stop_reason, 'tool_use');
    assert.deepEqual({ name: use?.name, input: use?.input }, { name: 'Write', input: { file_path: '/workspace/hello.txt', content: 'hi\n' } });
  });

  it('odd bodies straight to the demo upstream: 4xx JSON errors, and it keeps serving', async () => {
    const post = (path: string, body: string) => fetch(`${demo.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    const cases: Array<[string, string, number]> = [
      ['/chat/completions', 'not json', 400],
      ['/chat/completions', '[]', 400],
      ['/chat/completions', '{"messages":"x"}', 400],
      ['/chat/completions', '{"messages":[]}', 400],
      ['/chat/completions', '{"messages":[{"role":"user","content":"x"}],"tools":{}}', 400],
      ['/embeddings', '{"input":{}}', 400],
      ['/embeddings', '{"input":[1.5]}', 400],
      ['/embeddings', '{"input":"x","dimensions":0}', 400],
      ['/embeddings', '{"input":"x","encoding_format":"int8"}', 400],
      ['/nope', '{}', 404],
    ];
    for (const [path, body, status] of cases) {
      const res = await post(path, body);
      assert.equal(res.status, status, `${path} ${body}`);
      assert.equal(typeof ((await res.json()) as { error: { message: string } }).error.message, 'string');
    }
    // Odd but well-formed bodies: answered (never a 500).
    for (const body of [
      '{"messages":[{"role":"user","content":{"a":1}}],"tools":[null,1,"x",{"function":null}]}',
      '{"messages":[[],null,{"role":"assistant","tool_calls":"x"},{"role":"tool"}],"stream":true}',
      '{"messages":[{"role":"user","content":[null,{"text":5},{"type":"text","text":"Create a.txt saying hi"}]}],"tools":[{"type":"function","function":{"name":"bash"}},{"type":"function","function":{"name":"write_file"}}]}',
    ]) {
      const res = await post('/chat/completions', body);
      assert.equal(res.status, 200, body);
      await res.text();
    }
    assert.equal((await fetch(`${demo.url}/chat/completions`)).status, 405);
    const big = await post('/chat/completions', `{"messages":[{"role":"user","content":"${'x'.repeat(MAX_BODY_BYTES)}"}]}`);
    assert.equal(big.status, 413);
    const ok = await post('/chat/completions', '{"messages":[{"role":"user","content":"x"}]}');
    assert.equal(ok.status, 200);
  });

  it("start's decision: a configured credential or registry starts nothing; nothing configured starts the demo it points the stack at", async () => {
    for (const env of [{ AGGREGATOR_API_KEY: 'sk-real' }, { MODELS_CONFIG_PATH: '/srv/models.yaml' }]) {
      assert.equal(await startDemoModelIfWanted(env, loadSettings(env)), undefined, JSON.stringify(env));
    }
    const started = await startDemoModelIfWanted({}, loadSettings({}));
    assert.ok(started, 'the demo starts with nothing configured');
    try {
      assert.equal(started.env.MODELS_CONFIG_PATH, DEMO_MODELS_FILE);
      assert.match(started.env.DEMO_MODEL_URL!, /^http:\/\/127\.0\.0\.1:\d+\/v1$/);
      assert.match(started.banner, /NOT an LLM/);
      const health = (await (await fetch(started.env.DEMO_MODEL_URL!.replace(/\/v1$/, '/health'))).json()) as { demo: boolean };
      assert.equal(health.demo, true);
    } finally {
      await started.close();
    }
  });
});
