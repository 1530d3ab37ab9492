/**
 * The fake upstream serves each scripted behaviour over real HTTP and records every request.
 */
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { contextLengthMessage, startFakeUpstream, type FakeUpstream } from '../support/fake-upstream';

async function post(up: FakeUpstream, path: string, body: unknown, signal?: AbortSignal): Promise<Response> {
  return fetch(`${up.origin}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer up-key' }, body: JSON.stringify(body), ...(signal ? { signal } : {}) });
}

/** Parses `data:` lines of an SSE body. */
function sseData(text: string): string[] {
  return text.split('\n\n').filter((b) => b.startsWith('data: ')).map((b) => b.slice(6));
}

describe('fake LLM upstream', () => {
  let up: FakeUpstream;
  beforeEach(async () => {
    up = await startFakeUpstream();
  });
  afterEach(async () => {
    await up.close();
  });

  it('answers a JSON completion with usage incl. cached tokens, and records the request', async () => {
    up.enqueue({ kind: 'json', content: 'hi', usage: { prompt_tokens: 30, completion_tokens: 2, cached_tokens: 16 } });
    const res = await post(up, '/v1/chat/completions', { model: 'm1', messages: [{ role: 'user', content: 'x' }] });
    assert.equal(res.status, 200);
    const body = (await res.json()) as { model: string; choices: Array<{ message: { content: string } }>; usage: { prompt_tokens: number; prompt_tokens_details: { cached_tokens: number } } };
    assert.equal(body.model, 'm1');
    assert.equal(body.choices[0]?.message.content, 'hi');
    assert.equal(body.usage.prompt_tokens, 30);
    assert.equal(body.usage.prompt_tokens_details.cached_tokens, 16);
    assert.equal(up.requests.length, 1);
    assert.equal(up.requests[0]?.path, '/v1/chat/completions');
    assert.equal(up.requests[0]?.headers.authorization, 'Bearer up-key');
    assert.deepEqual((up.requests[0]?.body as { model: string }).model, 'm1');
  });

  it('reports a null prompt_tokens_details when scripted so', async () => {
    up.enqueue({ kind: 'json', usage: { prompt_tokens: 1, completion_tokens: 1, cached_tokens: null } });
    const body = (await (await post(up, '/v1/chat/completions', { model: 'm' })).json()) as { usage: Record<string, unknown> };
    assert.equal(body.usage.prompt_tokens_details, null);
  });

  it('streams paced SSE chunks with a final usage chunk and [DONE]', async () => {
    up.enqueue({ kind: 'sse', pieces: ['a', 'b', 'c'], intervalMs: 5, usage: { prompt_tokens: 9, completion_tokens: 3, cached_tokens: 8 } });
    const res = await post(up, '/v1/chat/completions', { model: 'm', stream: true });
    assert.equal(res.headers.get('content-type'), 'text/event-stream');
    const data = sseData(await res.text());
    assert.equal(data.at(-1), '[DONE]');
    const chunks = data.slice(0, -1).map((d) => JSON.parse(d) as { choices: Array<{ delta: { content?: string } }>; usage?: { prompt_tokens_details: { cached_tokens: number } } });
    assert.equal(chunks.map((c) => c.choices[0]?.delta.content ?? '').join(''), 'abc');
    assert.equal(chunks.at(-1)?.usage?.prompt_tokens_details.cached_tokens, 8);
  });

  it('returns embeddings, one vector per input', async () => {
    const res = await post(up, '/v1/embeddings', { model: 'e', input: ['one', 'two'] });
    const body = (await res.json()) as { data: Array<{ index: number; embedding: number[] }> };
    assert.deepEqual(body.data.map((d) => d.index), [0, 1]);
    assert.equal(body.data[0]?.embedding.length, 8);
  });

  it('replies with a tool call, streaming or not', async () => {
    up.enqueue({ kind: 'tool_call', name: 'bash', arguments: { command: 'ls' } }, { kind: 'tool_call', name: 'bash', arguments: { command: 'pwd' } });
    const plain = (await (await post(up, '/v1/chat/completions', { model: 'm' })).json()) as { choices: Array<{ finish_reason: string; message: { tool_calls: Array<{ function: { name: string; arguments: string } }> } }> };
    assert.equal(plain.choices[0]?.finish_reason, 'tool_calls');
    assert.deepEqual(JSON.parse(plain.choices[0]?.message.tool_calls[0]?.function.arguments ?? ''), { command: 'ls' });
    const streamed = sseData(await (await post(up, '/v1/chat/completions', { model: 'm', stream: true })).text());
    const first = JSON.parse(streamed[0] ?? '') as { choices: Array<{ delta: { tool_calls: Array<{ function: { arguments: string } }> } }> };
    assert.deepEqual(JSON.parse(first.choices[0]?.delta.tool_calls[0]?.function.arguments ?? ''), { command: 'pwd' });
  });

  it('answers 429 with Retry-After, 5xx and 401 with OpenAI-shaped errors', async () => {
    up.enqueue({ kind: 'status', status: 429, retryAfter: 7 }, { kind: 'status', status: 503 }, { kind: 'status', status: 401 });
    const limited = await post(up, '/v1/chat/completions', {});
    assert.equal(limited.status, 429);
    assert.equal(limited.headers.get('retry-after'), '7');
    assert.equal(((await limited.json()) as { error: { type: string } }).error.type, 'rate_limit_error');
    assert.equal((await post(up, '/v1/chat/completions', {})).status, 503);
    const unauthorized = await post(up, '/v1/chat/completions', {});
    assert.equal(unauthorized.status, 401);
    assert.equal(((await unauthorized.json()) as { error: { type: string } }).error.type, 'authentication_error');
  });

  it('delays the first byte when scripted: a short client timeout fails, a longer one gets the answer', async () => {
    up.enqueue({ kind: 'slow_first_byte', delayMs: 600, then: { kind: 'json' } }, { kind: 'slow_first_byte', delayMs: 600, then: { kind: 'json', content: 'late' } });
    await assert.rejects(post(up, '/v1/chat/completions', {}, AbortSignal.timeout(100)), (err: Error) => err.name === 'TimeoutError');
    const res = await post(up, '/v1/chat/completions', {}, AbortSignal.timeout(5000));
    assert.equal(((await res.json()) as { choices: Array<{ message: { content: string } }> }).choices[0]?.message.content, 'late');
  });

  it('stalls after the first chunk until the client aborts, and records the abort', async () => {
    up.enqueue({ kind: 'stall_after_first_chunk' });
    const controller = new AbortController();
    const res = await post(up, '/v1/chat/completions', { stream: true }, controller.signal);
    const reader = res.body!.getReader();
    const first = await reader.read();
    assert.match(Buffer.from(first.value ?? new Uint8Array()).toString('utf8'), /Partial/);
    const next = Promise.race([reader.read().then(() => 'more'), new Promise((r) => setTimeout(() => r('stalled'), 300))]);
    assert.equal(await next, 'stalled');
    controller.abort();
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(up.requests[0]?.aborted, true);
  });

  it('resets the socket mid-stream', async () => {
    up.enqueue({ kind: 'reset_mid_stream', afterChunks: 2 });
    let received = '';
    const outcome = await new Promise<{ error?: string }>((resolve) => {
      const req = request(`${up.origin}/v1/chat/completions`, { method: 'POST' }, (res) => {
        res.on('data', (c: Buffer) => (received += c.toString('utf8')));
        res.on('error', (err: NodeJS.ErrnoException) => resolve({ error: err.code ?? err.message }));
        res.on('end', () => resolve({}));
      });
      req.on('error', (err: NodeJS.ErrnoException) => resolve({ error: err.code ?? err.message }));
      req.end('{"stream":true}');
    });
    assert.match(received, /piece1/);
    assert.ok(outcome.error, 'the stream ends in an error, not a clean end');
  });

  it('refuses an over-long prompt with the engine wording', async () => {
    up.enqueue({ kind: 'context_length', contextLength: 4096, requested: 5000 });
    const res = await post(up, '/v1/chat/completions', {});
    assert.equal(res.status, 400);
    const body = (await res.json()) as { message: string };
    assert.equal(body.message, contextLengthMessage(4096, 5000));
    assert.match(body.message, /maximum context length is 4096 tokens/);
  });

  it('waits for a number of requests', async () => {
    const waiting = up.waitForRequests(2, 2000);
    await post(up, '/v1/chat/completions', {});
    await post(up, '/v1/embeddings', { input: 'x' });
    await waiting;
    assert.deepEqual(up.requests.map((r) => r.path), ['/v1/chat/completions', '/v1/embeddings']);
  });
});
