/**
 * The messages surface with keys and the request log (real PostgreSQL), through the official
 * `@anthropic-ai/sdk` client: a bad key, malformed and oversized bodies and a NUL in `model` are
 * messages-shaped errors; an answered request (also under the prefix, streaming) leaves an
 * `api_logs` row with surface `messages`, the provider label, cache tokens, user turns and tool calls.
 */
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { createKey, eventually, signUpAndLogIn } from '../support/accounts';
import { freshDatabase, type TestDatabase } from '../support/db';
import { startFakeMessagesUpstream, type FakeMessagesUpstream } from '../support/fake-messages-upstream';
import { startFakeUpstream, type FakeUpstream } from '../support/fake-upstream';
import { startTestGateway, type TestGateway } from '../support/gateway';

interface LogRow {
  model: string;
  provider: string | null;
  surface: string;
  status: number;
  stream: boolean;
  user_id: string | null;
  prompt_tokens: number | null;
  cache_read_tokens: number | null;
  completion_tokens: number | null;
  error_code: string | null;
  num_user_turns: number | null;
  num_tool_calls: number | null;
}

describe('messages surface: keys, errors and the request log (PostgreSQL)', function () {
  this.timeout(30_000);
  let t: TestDatabase;
  let upstream: FakeUpstream;
  let messagesUpstream: FakeMessagesUpstream;
  let gw: TestGateway | undefined;
  let key: string;

  const row = async (requestId: string | null): Promise<LogRow | undefined> => t.db('api_logs').where({ request_id: requestId }).first<LogRow | undefined>();
  const raw = (body: string, path = '/v1/messages') => fetch(`${gw!.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body });

  before(async () => {
    t = await freshDatabase();
    upstream = await startFakeUpstream();
    messagesUpstream = await startFakeMessagesUpstream();
    gw = await startTestGateway({
      db: t.db,
      env: { USER_AUTH_ENABLED: 'true', SIGNUP_REQUIRE_EMAIL_VERIFICATION: 'false', REQUEST_LOG_FLUSH_INTERVAL_MS: '20', GATEWAY_MAX_BODY_MIB: '0.01' },
      modelsYaml: `models:
  - { id: family-4.6, name: F, provider: vendor_a, base_url: "${upstream.url}", supports_tools: true }
  - { id: direct-4.6, name: D, provider: vendor_h_direct, base_url: "${messagesUpstream.origin}", api_key: up, supports_tools: true }
`,
    });
    key = await createKey(gw.url, await signUpAndLogIn(gw.url, t.db, 'mia@example.com'));
  });
  after(async () => {
    await gw?.close();
    await upstream?.close();
    await messagesUpstream?.close();
    await t?.drop();
  });

  it('answers a bad key with 401 authentication_error (SDK AuthenticationError)', async () => {
    const client = new Anthropic({ baseURL: gw!.url, apiKey: 'sk-wrong', maxRetries: 0 });
    await assert.rejects(client.messages.create({ model: 'family-4.6', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }),
      (err: unknown) => err instanceof Anthropic.AuthenticationError && (err.error as { type: string; error: { type: string } }).error.type === 'authentication_error');
  });

  it('takes the key from X-Api-Key when there is no Authorization header (messages paths only)', async () => {
    const body = JSON.stringify({ model: 'family-4.6', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] });
    const post = (path: string, headers: Record<string, string>) => fetch(`${gw!.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
    assert.equal((await post('/v1/messages', { 'x-api-key': key })).status, 200);
    assert.equal((await post('/anthropic/v1/messages/count_tokens', { 'x-api-key': key })).status, 200);
    const none = await post('/v1/messages', {});
    assert.equal(none.status, 401);
    const noneBody = (await none.json()) as { error: { type: string; message: string } };
    assert.equal(noneBody.error.type, 'authentication_error');
    assert.match(noneBody.error.message, /^Missing API key: send a gateway API key as x-api-key/);
    const wrong = await post('/v1/messages', { 'x-api-key': 'sk-wrong' });
    assert.equal(wrong.status, 401);
    assert.match(((await wrong.json()) as { error: { message: string } }).error.message, /Invalid API key in the x-api-key header/, 'the 401 names the header that was read');
    const bothWrong = await post('/v1/messages', { 'x-api-key': key, authorization: 'Bearer sk-wrong' });
    assert.equal(bothWrong.status, 401, 'Authorization wins');
    assert.match(((await bothWrong.json()) as { error: { message: string } }).error.message, /Authorization: Bearer/);
    const chat = await post('/v1/chat/completions', { 'x-api-key': key });
    assert.equal(chat.status, 401, 'chat reads only Authorization');
    assert.equal(((await chat.json()) as { error: { type: string; code: string } }).error.code, 'unauthorized', 'chat keeps its error shape');
  });

  it('answers malformed JSON, an oversized body and a NUL in model with messages-shaped 400/413', async () => {
    const bad = await raw('{"model": ');
    assert.equal(bad.status, 400);
    assert.equal(((await bad.json()) as { type: string; error: { type: string } }).error.type, 'invalid_request_error');
    const big = await raw(JSON.stringify({ model: 'family-4.6', max_tokens: 5, messages: [{ role: 'user', content: 'x'.repeat(20_000) }] }), '/anthropic/v1/messages');
    assert.equal(big.status, 413);
    assert.deepEqual(((await big.json())), { type: 'error', error: { type: 'request_too_large', message: 'Request body is larger than 10486 bytes' } });
    const nul = await raw(JSON.stringify({ model: 'family\u0000-4.6', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }));
    assert.equal(nul.status, 400);
    const body = (await nul.json()) as { type: string; error: { type: string; message: string } };
    assert.equal(body.type, 'error');
    assert.match(body.error.message, /'model'/);
  });

  it('logs an answered request with surface messages, provider, cache tokens, user turns and tool calls', async () => {
    upstream.enqueue({ kind: 'json', content: 'done', usage: { prompt_tokens: 40, completion_tokens: 2, cached_tokens: 30 } });
    const client = new Anthropic({ baseURL: `${gw!.url}/anthropic`, apiKey: key, maxRetries: 0 });
    const { response } = await client.messages.create({
      model: 'family-4-6', max_tokens: 5,
      messages: [
        { role: 'user', content: 'run it' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'tu1', name: 'bash', input: {} }, { type: 'tool_use', id: 'tu2', name: 'bash', input: {} }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'tu1', content: 'a' }, { type: 'tool_result', tool_use_id: 'tu2', content: 'b' }] },
      ],
    }).withResponse();
    const id = response.headers.get('x-request-id');
    await eventually(async () => (await row(id)) !== undefined, 'the row');
    const logged = (await row(id))!;
    assert.deepEqual(
      [logged.model, logged.provider, logged.surface, logged.status, logged.stream, logged.prompt_tokens, logged.cache_read_tokens, logged.num_user_turns, logged.num_tool_calls],
      ['family-4.6', 'vendor_a', 'messages', 200, false, 40, 30, 1, 2],
    );
    assert.notEqual(logged.user_id, null);
  });

  it('logs a streamed request with its usage', async () => {
    upstream.enqueue({ kind: 'sse', pieces: ['a', 'b'], usage: { prompt_tokens: 11, completion_tokens: 2, cached_tokens: 5 } });
    const client = new Anthropic({ baseURL: gw!.url, apiKey: key, maxRetries: 0 });
    const stream = client.messages.stream({ model: 'family-4.6', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] });
    const final = await stream.finalMessage();
    assert.equal(final.usage.cache_read_input_tokens, 5);
    const id = (await stream.withResponse()).response.headers.get('x-request-id');
    await eventually(async () => (await row(id)) !== undefined, 'the row');
    const logged = (await row(id))!;
    assert.deepEqual([logged.surface, logged.stream, logged.prompt_tokens, logged.cache_read_tokens], ['messages', true, 11, 5]);
  });

  it('honours X-Probe: synthetic from an internal key only: X-Provider named and no request-log row; from a free key a plain logged request', async () => {
    const internal = await createKey(gw!.url, await signUpAndLogIn(gw!.url, t.db, 'probe-internal@example.com'));
    await t.db('users').where({ email: 'probe-internal@example.com' }).update({ role: 'internal', updated_at: t.db.fn.now() });
    await eventually(() => Promise.resolve(gw!.deps.keys?.lookup(internal)?.role === 'internal'), 'the key cache to see the internal role');
    const send = (credential: string) => fetch(`${gw!.url}/v1/messages`, {
      method: 'POST', headers: { 'x-api-key': credential, 'x-probe': 'synthetic', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'family-4.6', max_tokens: 5, messages: [{ role: 'user', content: 'probe' }] }),
    });
    upstream.enqueue({ kind: 'json', content: 'ok' });
    const probe = await send(internal);
    assert.equal(probe.status, 200, await probe.clone().text());
    assert.equal(probe.headers.get('x-provider'), 'vendor_a');
    upstream.enqueue({ kind: 'json', content: 'ok' });
    const free = await send(key);
    assert.equal(free.status, 200);
    assert.equal(free.headers.get('x-provider'), null, 'a free key\'s probe header is not honoured');
    await eventually(async () => (await row(free.headers.get('x-request-id'))) !== undefined, 'the free key\'s row');
    assert.equal(await row(probe.headers.get('x-request-id')), undefined, 'the honoured probe is not logged');
  });

  it('logs a passed-through request (messages-API route) with the upstream\'s usage, streamed or not; a stream cut short as failed', async () => {
    const usage = { input_tokens: 7, output_tokens: 3, cache_read_input_tokens: 20, cache_creation_input_tokens: 4 };
    messagesUpstream.enqueue({ kind: 'message', usage }, { kind: 'message', usage }, { kind: 'stream_cut', text: 'par' });
    const body = (stream: boolean) => JSON.stringify({ model: 'direct-4-6', max_tokens: 5, stream, messages: [{ role: 'user', content: 'x' }, { role: 'system', content: 'env' }] });
    const logged: LogRow[] = [];
    for (const stream of [false, true, true]) {
      const res = await raw(body(stream), '/v1/messages?beta=true');
      assert.equal(res.status, 200);
      await res.text();
      const id = res.headers.get('x-request-id');
      await eventually(async () => (await row(id)) !== undefined, 'the row');
      logged.push((await row(id))!);
    }
    const facts = logged.map((r) => [r.model, r.provider, r.surface, r.stream, r.prompt_tokens, r.completion_tokens, r.cache_read_tokens, r.error_code]);
    assert.deepEqual(facts.slice(0, 2), [
      ['direct-4.6', 'vendor_h_direct', 'messages', false, 31, 3, 20, null],
      ['direct-4.6', 'vendor_h_direct', 'messages', true, 31, 3, 20, null],
    ]);
    assert.equal(logged[2]!.error_code, 'upstream_stream_failed');
  });
});
