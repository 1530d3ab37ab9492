/**
 * Routes whose upstream speaks the Responses API (`upstream_api: responses`, docs/adapters.md
 * "Responses-API upstreams") through a real gateway and PostgreSQL: the client's body reaches the
 * upstream intact (model replaced), the stream comes back as the upstream's bytes event by event,
 * usage from `response.completed` lands in `api_logs`, a failure after the first byte becomes
 * `response.failed`, and the chat surfaces refuse such a model.
 */
import assert from 'node:assert/strict';
import { freshDatabaseForBlock, type TestDatabase } from '../support/db';
import { responsesEvents, startFakeResponsesUpstream, type FakeResponsesUpstream } from '../support/fake-responses-upstream';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { waitFor } from '../support/wait';

type Json = Record<string, unknown>;

interface LogRow {
  status: number;
  stream: boolean;
  prompt_tokens: number | null;
  completion_tokens: number | null;
  cache_read_tokens: number | null;
  error_code: string | null;
  surface: string;
}

const MESSAGE = { type: 'message', id: 'msg_up', role: 'assistant', content: [{ type: 'output_text', text: 'hello from upstream', annotations: [] }] };

describe('integration: Responses-API upstream routes', function () {
  this.timeout(30_000);
  let t: TestDatabase;
  let up: FakeResponsesUpstream;
  let gw: TestGateway;

  freshDatabaseForBlock((db) => {
    t = db;
  });
  beforeEach(async () => {
    up = await startFakeResponsesUpstream();
    gw = await startTestGateway({ db: t.db, env: { REQUEST_LOG_FLUSH_INTERVAL_MS: '20' }, modelsYaml: `models:
  - { id: r, name: R, provider: generic_compat, base_url: "${up.url}", provider_model_id: up-model, upstream_api: responses, api_key: up-key }
` });
  });
  afterEach(async () => {
    await gw.close();
    await up.close();
  });

  const post = (path: string, body: unknown, id: string) => fetch(`${gw.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-request-id': id }, body: JSON.stringify(body) });
  const rowOf = (id: string) => waitFor(() => t.db('api_logs').where({ request_id: id }).first<LogRow | undefined>(), `the api_logs row of ${id}`);

  it('relays the stream byte for byte, event by event, and logs the usage of response.completed', async () => {
    const reply = { output: [MESSAGE], usage: { input_tokens: 40, output_tokens: 6, cached_tokens: 10 }, byteSlices: 5 };
    up.script(() => reply);
    const body = { model: 'r', stream: true, input: [{ type: 'web_search_call', id: 'ws_1', status: 'completed', action: { type: 'search', query: 'q' } }, { role: 'user', content: 'hi' }], tools: [{ type: 'web_search' }], store: false, include: ['reasoning.encrypted_content'] };
    const res = await post('/v1/responses', body, 'native-stream');
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /text\/event-stream/);
    const expected = responsesEvents('resp_up_1', 'up-model', reply).map(([type, payload], n) => `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: n, ...payload })}\n\n`).join('');
    assert.equal(await res.text(), expected);
    assert.deepEqual(up.requests[0]!.body, { ...body, model: 'up-model' }, 'the client body, only the model replaced');
    assert.equal(up.requests[0]!.path, '/v1/responses');
    assert.equal(up.requests[0]!.headers.authorization, 'Bearer up-key');
    const row = await rowOf('native-stream');
    assert.deepEqual([row.status, row.stream, row.prompt_tokens, row.completion_tokens, row.cache_read_tokens, row.error_code], [200, true, 40, 6, 10, null]);
  });

  it('returns the upstream response object as it is when not streaming, usage logged', async () => {
    up.script(() => ({ output: [MESSAGE], usage: { input_tokens: 11, output_tokens: 3 } }));
    const res = await post('/v1/responses', { model: 'r', input: 'hi', previous_response_id: 'resp_earlier' }, 'native-json');
    assert.equal(res.status, 200);
    const answer = await res.json() as Json;
    assert.equal(answer.id, 'resp_up_1');
    assert.deepEqual(answer.output, [MESSAGE]);
    assert.equal(up.requests[0]!.body.previous_response_id, 'resp_earlier', 'fields chat cannot carry reach a Responses-API upstream');
    const row = await rowOf('native-json');
    assert.deepEqual([row.prompt_tokens, row.completion_tokens, row.cache_read_tokens], [11, 3, 0]);
  });

  it('ends a stream that breaks after its first byte with response.failed, numbered after the last event', async () => {
    up.script(() => ({ output: [MESSAGE], resetAfterEvents: 3 }));
    const res = await post('/v1/responses', { model: 'r', stream: true, input: 'hi' }, 'native-broken');
    const events = (await res.text()).split('\n\n').filter(Boolean).map((frame) => JSON.parse(frame.split('\n').find((l) => l.startsWith('data: '))!.slice(6)) as Json);
    assert.deepEqual(events.map((e) => e.type), ['response.created', 'response.in_progress', 'response.output_item.added', 'response.failed']);
    const failed = events.at(-1)!;
    assert.equal(failed.sequence_number, 3);
    assert.equal((failed.response as Json).id, 'resp_up_1');
    assert.equal(((failed.response as Json).error as Json).code, 'server_error');
    const row = await rowOf('native-broken');
    assert.equal(row.error_code, 'upstream_stream_failed');
  });

  it('refuses the chat surfaces for a model served only by Responses-API routes, nothing sent', async () => {
    const res = await post('/v1/chat/completions', { model: 'r', messages: [{ role: 'user', content: 'hi' }] }, 'native-chat');
    assert.equal(res.status, 400);
    assert.match(((await res.json()) as { error: { message: string } }).error.message, /served only through \/v1\/responses/);
    assert.equal(up.requests.length, 0);
  });
});
