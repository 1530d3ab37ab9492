/**
 * readJsonBody at the door (docs/security.md, text hygiene): depth bounded before the parse, NUL
 * and unpaired surrogates refused in values and keys with the dotted path in the message and
 * `param`, and the inference surfaces' forwarded mode that walks no strings.
 */
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { AppError } from '../../../../lib/errors';
import { readJsonBody, type JsonBodyOptions } from '../../../../lib/http/json-body';
import { MAX_JSON_DEPTH } from '../../../../lib/text';

/** A request whose body is `text` (no socket: nothing here is refused for size). */
function request(text: string): IncomingMessage {
  return Object.assign(Readable.from([Buffer.from(text, 'utf8')]), { headers: {}, complete: false }) as unknown as IncomingMessage;
}

async function refusal(text: string, options?: JsonBodyOptions): Promise<AppError> {
  try {
    await readJsonBody(request(text), 1024 * 1024, options);
  } catch (err) {
    assert.ok(err instanceof AppError, String(err));
    return err;
  }
  assert.fail(`the body was accepted: ${text.slice(0, 80)}`);
}

const nested = (depth: number, inner = '1') => '['.repeat(depth) + inner + ']'.repeat(depth);

describe('readJsonBody', () => {
  it(`refuses JSON nested deeper than ${MAX_JSON_DEPTH} levels with 400 naming the bound, and reads ${MAX_JSON_DEPTH} levels`, async () => {
    const deep = await refusal(nested(MAX_JSON_DEPTH + 1));
    assert.equal(deep.status, 400);
    assert.match(deep.message, new RegExp(`deeper than ${MAX_JSON_DEPTH} levels`));
    const objects = await refusal(`{"messages":[{"content":${nested(10_000)}}]}`);
    assert.equal(objects.status, 400, 'a 10,000-deep array inside an object is refused unparsed');
    assert.deepEqual(await readJsonBody(request(nested(MAX_JSON_DEPTH)), 1024 * 1024), JSON.parse(nested(MAX_JSON_DEPTH)));
    assert.deepEqual(await readJsonBody(request(`{"a":"${'['.repeat(200)}"}`), 1024), { a: '['.repeat(200) }, 'brackets inside strings do not count');
  });

  it('refuses a NUL or an unpaired surrogate in a value with 400 naming its dotted path', async () => {
    const nul = await refusal('{"job":{"env":{"A":"fine","B":"x\\u0000y"}}}');
    assert.equal(nul.status, 400);
    assert.equal(nul.message, "Invalid field 'job.env.B': must not contain NUL characters (\\u0000)");
    assert.equal(nul.param, 'job.env.B');
    const lone = await refusal('{"messages":[{"content":"ok"},{"content":["a","\\ud800"]}]}');
    assert.equal(lone.message, "Invalid field 'messages.1.content.1': must not contain unpaired UTF-16 surrogates");
    assert.equal(lone.param, 'messages.1.content.1');
    const trailing = await refusal('{"title":"\\udc00"}');
    assert.equal(trailing.param, 'title');
  });

  it('refuses a bad key, naming its path with the visible replacement', async () => {
    const key = await refusal('{"env":{"A\\u0000B":"v"}}');
    assert.equal(key.status, 400);
    assert.equal(key.param, 'env.A\uFFFDB');
    assert.ok(!key.message.includes('\0'), 'the message quotes no NUL');
    const surrogateKey = await refusal('{"\\ud800":1}');
    assert.equal(surrogateKey.param, '\uFFFD');
    assert.ok(surrogateKey.message.isWellFormed());
  });

  it('refuses a bare bad string, and accepts paired surrogates and ordinary text', async () => {
    const bare = await refusal('"\\u0000"');
    assert.equal(bare.status, 400);
    assert.equal(bare.param, undefined);
    assert.match(bare.message, /^Invalid request body: must not contain NUL/);
    assert.deepEqual(await readJsonBody(request('{"t":"\\ud83d\\ude00 é \\u00e9","n":[null,true,1.5]}'), 1024), { t: '😀 é é', n: [null, true, 1.5] });
  });

  it('quotes no raw bad text from a JSON syntax error', async () => {
    const raw = await refusal('{"a":"x\u0000y"}');
    assert.equal(raw.status, 400);
    assert.match(raw.message, /not valid JSON/);
    assert.ok(!raw.message.includes('\0'));
  });

  it("forwards strings unwalked with text: 'forward', and still bounds depth", async () => {
    const forwarded: JsonBodyOptions = { text: 'forward' };
    assert.deepEqual(await readJsonBody(request('{"content":"a\\u0000\\ud800"}'), 1024, forwarded), { content: 'a\u0000\ud800' });
    assert.equal((await refusal(nested(MAX_JSON_DEPTH + 1), forwarded)).status, 400);
  });

  it("replaces bad text visibly with text: 'replace', keys included, and leaves a clean body as parsed", async () => {
    const replaced = await readJsonBody(request('{"events":[{"payload":{"out":"a\\u0000b","k\\ud800":["\\udc00x"]}}]}'), 1024, { text: 'replace' });
    assert.deepEqual(replaced, { events: [{ payload: { out: 'a\uFFFDb', 'k\uFFFD': ['\uFFFDx'] } }] });
    assert.deepEqual(await readJsonBody(request('{"a":["\\ud83d\\ude00"]}'), 1024, { text: 'replace' }), { a: ['😀'] });
    assert.equal((await refusal(nested(MAX_JSON_DEPTH + 1), { text: 'replace' })).status, 400);
  });
});
