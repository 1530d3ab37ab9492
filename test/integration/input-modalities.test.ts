/**
 * Input modalities through a real gateway to real fake upstreams (docs/routing.md "Input
 * modalities"): a request carrying images or audio reaches only routes whose `input_modalities`
 * accept them, on every surface (chat completions, responses, messages); when no route does, the
 * answer is a 503 naming the modalities and no upstream is called. Text-only requests are unchanged.
 */
import assert from 'node:assert/strict';
import { startFakeMessagesUpstream, type FakeMessagesUpstream } from '../support/fake-messages-upstream';
import { closeAll, startUpstreamPair, type FakeUpstream } from '../support/fake-upstream';
import { chatModelYaml, startTestGateway, type TestGateway } from '../support/gateway';

type Json = Record<string, unknown>;

const PNG = 'data:image/png;base64,iVBORw0KGgo=';
const CHAT_IMAGE = [{ type: 'text', text: 'What is this?' }, { type: 'image_url', image_url: { url: PNG } }];
const CHAT_AUDIO = [{ type: 'text', text: 'Transcribe' }, { type: 'input_audio', input_audio: { data: 'UklGRg==', format: 'wav' } }];
const RESPONSES_IMAGE = [{ role: 'user', content: [{ type: 'input_text', text: 'What is this?' }, { type: 'input_image', image_url: PNG }] }];
const MESSAGES_IMAGE = [{ role: 'user', content: [{ type: 'text', text: 'What is this?' }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } }] }];

function post(gw: TestGateway, path: string, body: Json): Promise<Response> {
  return fetch(`${gw.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' }, body: JSON.stringify(body) });
}

const surfaces: Array<{ name: string; send(gw: TestGateway, model: string, stream?: boolean): Promise<Response> }> = [
  { name: 'chat completions', send: (gw, model, stream) => post(gw, '/v1/chat/completions', { model, messages: [{ role: 'user', content: CHAT_IMAGE }], stream }) },
  { name: 'responses', send: (gw, model, stream) => post(gw, '/v1/responses', { model, input: RESPONSES_IMAGE, stream }) },
  { name: 'messages', send: (gw, model, stream) => post(gw, '/v1/messages', { model, max_tokens: 64, messages: MESSAGES_IMAGE, stream }) },
];

async function errorOf(res: Response): Promise<{ status: number; message: string }> {
  const body = (await res.json()) as { error: { message: string } };
  return { status: res.status, message: body.error.message };
}

describe('input modalities', function () {
  this.timeout(30_000);
  let a: FakeUpstream;
  let b: FakeUpstream;
  let m: FakeMessagesUpstream;
  let gw: TestGateway;

  before(async () => {
    [a, b] = await startUpstreamPair();
    m = await startFakeMessagesUpstream();
    // Route A (tried first with rng 0) takes text only (no input_modalities: the default); route B also images.
    const yaml = `models:\n${chatModelYaml('plain', [`{ kind: generic_compat, base_url: "${a.url}" }`])}`
      + chatModelYaml('vision', [`{ kind: generic_compat, base_url: "${a.url}" }`, `{ kind: generic_compat, base_url: "${b.url}", input_modalities: [text, image] }`])
      + chatModelYaml('listener', [`{ kind: generic_compat, base_url: "${a.url}", input_modalities: [text, audio] }`])
      + chatModelYaml('native-text', [`{ kind: vendor_h_direct, base_url: "${m.origin}", api_key: k }`])
      + chatModelYaml('native-vision', [`{ kind: vendor_h_direct, base_url: "${m.origin}", api_key: k, input_modalities: [text, image] }`]);
    gw = await startTestGateway({ modelsYaml: yaml, rng: () => 0 });
  });
  after(async () => {
    await closeAll(gw, a, b);
    await m.close();
  });
  beforeEach(() => {
    a.requests.length = 0;
    b.requests.length = 0;
    m.requests.length = 0;
  });

  for (const surface of surfaces) {
    it(`${surface.name}: an image to a text-only model is a 503 naming image, upstream never called`, async () => {
      for (const stream of [false, true]) {
        const err = await errorOf(await surface.send(gw, 'plain', stream));
        assert.equal(err.status, 503, `stream ${stream}`);
        assert.match(err.message, /AllCircuitsOpenError: no route accepts the request's input modalities \(image\)/);
      }
      assert.equal(a.requests.length + b.requests.length, 0);
    });

    it(`${surface.name}: an image skips the text-only first route and is served by the route accepting images`, async () => {
      b.enqueue({ kind: 'json', content: 'a cat' });
      const res = await surface.send(gw, 'vision');
      assert.equal(res.status, 200, await res.clone().text());
      assert.equal(a.requests.length, 0, 'the text-only route is never tried');
      assert.equal(b.requests.length, 1);
      b.enqueue({ kind: 'sse', pieces: ['a ', 'cat'] });
      const streamed = await surface.send(gw, 'vision', true);
      assert.equal(streamed.status, 200);
      await streamed.text();
      assert.equal(a.requests.length, 0);
      assert.equal(b.requests.length, 2);
    });
  }

  it('text to a text-only model and to a mixed model is unchanged (the first route serves it)', async () => {
    a.enqueue({ kind: 'json', content: 'hi' }, { kind: 'json', content: 'hi' });
    assert.equal((await post(gw, '/v1/chat/completions', { model: 'plain', messages: [{ role: 'user', content: 'Hi' }] })).status, 200);
    assert.equal((await post(gw, '/v1/chat/completions', { model: 'vision', messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi' }] }] })).status, 200);
    assert.equal(a.requests.length, 2);
    assert.equal(b.requests.length, 0);
  });

  it('audio needs a route accepting audio: 503 naming audio (and image) elsewhere, served where accepted', async () => {
    const refused = await errorOf(await post(gw, '/v1/chat/completions', { model: 'vision', messages: [{ role: 'user', content: CHAT_AUDIO }] }));
    assert.equal(refused.status, 503);
    assert.match(refused.message, /input modalities \(audio\)/);
    const both = await errorOf(await post(gw, '/v1/chat/completions', { model: 'listener', messages: [{ role: 'user', content: [...CHAT_IMAGE, ...CHAT_AUDIO] }] }));
    assert.match(both.message, /input modalities \(image, audio\)/);
    assert.equal(a.requests.length + b.requests.length, 0);
    a.enqueue({ kind: 'json', content: 'words' });
    assert.equal((await post(gw, '/v1/chat/completions', { model: 'listener', messages: [{ role: 'user', content: CHAT_AUDIO }] })).status, 200);
    a.enqueue({ kind: 'json', content: 'words' });
    const audioInput = [{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'UklGRg==', format: 'wav' } }] }];
    assert.equal((await post(gw, '/v1/responses', { model: 'listener', input: audioInput })).status, 200);
    assert.deepEqual(((a.requests[1]!.body as { messages: Json[] }).messages[0]!.content as Json[])[0], CHAT_AUDIO[1], 'responses input_audio goes upstream as a chat input_audio part');
    assert.equal((await post(gw, '/v1/responses', { model: 'plain', input: audioInput })).status, 503);
    assert.equal(a.requests.length, 2);
  });

  it('messages surface on a messages-API route: an image beside a block chat cannot carry is still checked', async () => {
    const body = (model: string): Json => ({
      model, max_tokens: 64,
      messages: [{ role: 'user', content: [...MESSAGES_IMAGE[0]!.content, { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'notes' } }] }],
    });
    const err = await errorOf(await post(gw, '/v1/messages', body('native-text')));
    assert.equal(err.status, 503);
    assert.match(err.message, /\(image\)/);
    assert.equal(m.requests.length, 0);
    m.enqueue({ kind: 'message' });
    assert.equal((await post(gw, '/v1/messages', body('native-vision'))).status, 200);
    assert.equal(m.requests.length, 1);
  });
});
