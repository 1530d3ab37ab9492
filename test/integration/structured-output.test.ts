/**
 * Structured output through a real gateway to real fake upstreams (docs/inference-surfaces.md
 * "Structured output"): `response_format` / `text.format` reach only routes declaring
 * `supports_structured_output`, unchanged; a JSON Schema asked of a model with none is a 400 and
 * no upstream is called; `json_object` is a hint, dropped on routes without support.
 */
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { closeAll, startUpstreamPair, type FakeUpstream } from '../support/fake-upstream';
import { chatModelYaml, startTestGateway, type TestGateway } from '../support/gateway';

type Json = Record<string, unknown>;

const SCHEMA_FORMAT = {
  type: 'json_schema',
  json_schema: {
    name: 'weather', strict: true,
    schema: { type: 'object', properties: { city: { type: 'string' }, temp: { type: 'number', minimum: -90 } }, required: ['city', 'temp'], additionalProperties: false },
  },
};

function post(gw: TestGateway, path: string, body: Json): Promise<Response> {
  return fetch(`${gw.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

function chat(gw: TestGateway, body: Json): Promise<Response> {
  return post(gw, '/v1/chat/completions', { messages: [{ role: 'user', content: 'Weather?' }], ...body });
}

async function errorOf(res: Response): Promise<{ status: number; message: string; param: unknown }> {
  const body = (await res.json()) as { error: { message: string; param?: unknown } };
  return { status: res.status, message: body.error.message, param: body.error.param };
}

describe('structured output', function () {
  this.timeout(30_000);
  let a: FakeUpstream;
  let b: FakeUpstream;
  let gw: TestGateway;

  before(async () => {
    [a, b] = await startUpstreamPair();
    // `mixed`: route A (tried first with rng 0) lacks structured output, route B has it.
    const yaml = `models:\n${chatModelYaml('plain', [`{ kind: generic_compat, base_url: "${a.url}" }`])}`
      + chatModelYaml('structured', [`{ kind: generic_compat, base_url: "${b.url}", supports_structured_output: true }`])
      + chatModelYaml('mixed', [`{ kind: generic_compat, base_url: "${a.url}" }`, `{ kind: generic_compat, base_url: "${b.url}", supports_structured_output: true }`]);
    gw = await startTestGateway({ modelsYaml: yaml, rng: () => 0 });
  });
  after(async () => {
    await closeAll(gw, a, b);
  });
  beforeEach(() => {
    a.requests.length = 0;
    b.requests.length = 0;
  });

  it('forwards a json_schema response_format unchanged to a supporting model', async () => {
    b.enqueue({ kind: 'json', content: '{"city":"Oslo","temp":3}' });
    const res = await chat(gw, { model: 'structured', response_format: SCHEMA_FORMAT });
    assert.equal(res.status, 200);
    const sent = b.requests[0]!.body as Json;
    assert.equal(JSON.stringify(sent.response_format), JSON.stringify(SCHEMA_FORMAT), 'byte-equal JSON value');
  });

  it('sends structured requests only to the routes that support them', async () => {
    b.enqueue({ kind: 'json', content: '{}' });
    assert.equal((await chat(gw, { model: 'mixed', response_format: SCHEMA_FORMAT })).status, 200);
    assert.equal(a.requests.length, 0, 'the route without structured output is skipped');
    assert.deepEqual((b.requests[0]!.body as Json).response_format, SCHEMA_FORMAT);
    a.enqueue({ kind: 'json', content: 'plain' });
    assert.equal((await chat(gw, { model: 'mixed' })).status, 200);
    assert.equal(a.requests.length, 1, 'without response_format the usual order applies');
  });

  it('streams a structured request from a supporting route, the schema unchanged', async () => {
    b.enqueue({ kind: 'sse', pieces: ['{"city":', '"Oslo","temp":3}'] });
    const res = await chat(gw, { model: 'mixed', stream: true, response_format: SCHEMA_FORMAT });
    assert.equal(res.status, 200);
    assert.match(await res.text(), /\[DONE\]/);
    assert.equal(a.requests.length, 0);
    const sent = b.requests[0]!.body as Json;
    assert.equal(sent.stream, true);
    assert.equal(JSON.stringify(sent.response_format), JSON.stringify(SCHEMA_FORMAT));
  });

  it('answers 400 naming the model and the field for a model without structured output, upstream never called', async () => {
    const err = await errorOf(await chat(gw, { model: 'plain', response_format: SCHEMA_FORMAT }));
    assert.equal(err.status, 400);
    assert.equal(err.param, 'response_format');
    assert.match(err.message, /Model plain does not support structured output/);
    assert.equal(a.requests.length + b.requests.length, 0);
  });

  it('json_object and text are hints: forwarded to supporting routes, dropped elsewhere, never refused', async () => {
    b.enqueue({ kind: 'json', content: '{}' });
    assert.equal((await chat(gw, { model: 'structured', response_format: { type: 'json_object' } })).status, 200);
    assert.deepEqual((b.requests[0]!.body as Json).response_format, { type: 'json_object' });
    for (const format of [{ type: 'json_object' }, { type: 'text' }]) {
      a.enqueue({ kind: 'json', content: '{}' });
      assert.equal((await chat(gw, { model: 'plain', response_format: format })).status, 200);
      assert.ok(!('response_format' in (a.requests.at(-1)!.body as Json)), 'dropped on a route without structured output');
    }
    assert.equal(b.requests.length, 1);
  });

  it('refuses bad shapes with a 400 naming the field', async () => {
    const cases: Array<[unknown, string]> = [
      ['json', 'response_format'],
      [[SCHEMA_FORMAT], 'response_format'],
      [{ type: 'xml' }, 'response_format.type'],
      [{}, 'response_format.type'],
      [{ type: 'json_schema' }, 'response_format.json_schema'],
      [{ type: 'json_schema', json_schema: { name: 'x' } }, 'response_format.json_schema.schema'],
      [{ type: 'json_schema', json_schema: { name: 'x', schema: 'object' } }, 'response_format.json_schema.schema'],
      [{ type: 'json_schema', json_schema: { schema: {} } }, 'response_format.json_schema.name'],
    ];
    for (const [format, param] of cases) {
      const err = await errorOf(await chat(gw, { model: 'structured', response_format: format }));
      assert.equal(err.status, 400, JSON.stringify(format));
      assert.equal(err.param, param, JSON.stringify(format));
    }
    assert.equal(a.requests.length + b.requests.length, 0);
  });

  it('responses surface: text.format json_schema becomes response_format on supporting routes only', async () => {
    b.enqueue({ kind: 'json', content: '{"city":"Oslo","temp":3}' });
    const format = { type: 'json_schema', name: 'weather', strict: true, schema: SCHEMA_FORMAT.json_schema.schema };
    const res = await post(gw, '/v1/responses', { model: 'mixed', input: 'Weather?', text: { format } });
    assert.equal(res.status, 200);
    assert.equal(a.requests.length, 0);
    assert.deepEqual((b.requests[0]!.body as Json).response_format, SCHEMA_FORMAT);
    const refused = await errorOf(await post(gw, '/v1/responses', { model: 'plain', input: 'Weather?', text: { format } }));
    assert.equal(refused.status, 400);
    assert.equal(refused.param, 'text.format');
    assert.match(refused.message, /Model plain/);
    for (const [text, param] of [[{ format: 'json' }, 'text.format'], [{ format: { type: 'yaml' } }, 'text.format.type'], [{ format: { type: 'json_schema', name: 'x' } }, 'text.format.schema']] as const) {
      const err = await errorOf(await post(gw, '/v1/responses', { model: 'structured', input: 'Hi', text }));
      assert.equal(err.status, 400);
      assert.equal(err.param, param);
    }
    assert.equal(a.requests.length, 0);
    assert.equal(b.requests.length, 1);
  });

  it('works with the official openai client', async () => {
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'client-key', maxRetries: 0 });
    b.enqueue({ kind: 'json', content: '{"city":"Oslo","temp":3}' });
    const completion = await client.chat.completions.create({
      model: 'structured', messages: [{ role: 'user', content: 'Weather?' }],
      response_format: SCHEMA_FORMAT as OpenAI.ResponseFormatJSONSchema,
    });
    assert.deepEqual(JSON.parse(completion.choices[0]!.message.content!), { city: 'Oslo', temp: 3 });
    assert.deepEqual((b.requests[0]!.body as Json).response_format, SCHEMA_FORMAT);
    await assert.rejects(
      client.chat.completions.create({ model: 'plain', messages: [{ role: 'user', content: 'Hi' }], response_format: SCHEMA_FORMAT as OpenAI.ResponseFormatJSONSchema }),
      (err: unknown) => err instanceof OpenAI.BadRequestError && /structured output/.test(err.message),
    );
  });
});
