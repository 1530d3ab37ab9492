/**
 * The internal JSON client against a real loopback HTTP server: what it sends (method, encoded
 * path, bearer token, JSON body), what it returns (the response schema's output), and the one
 * typed error for every failure: timeout, network error, 4xx with the server's code, 5xx, a body
 * outside the contract, with the token never part of an error.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { inspect } from 'node:util';
import { z } from 'zod';
import { defineEndpoint, pathOf } from '../../../../lib/contracts/endpoint';
import { InternalCallError, InternalClient } from '../../../../lib/http/internal-client';

const TOKEN = 'tok_internal-secret-value-42';

const thingEndpoint = defineEndpoint({
  name: 'thing update',
  method: 'POST',
  route: '/internal/things/:thingId/update',
  request: z.object({ size: z.number().int() }).strict(),
  response: z.object({ thing_id: z.string(), size: z.number().int() }),
});
const statusEndpoint = defineEndpoint({ name: 'status read', method: 'GET', route: '/internal/status', request: z.object({}), response: z.object({ up: z.boolean() }) });

interface Seen {
  method: string;
  url: string;
  authorization: string | undefined;
  contentType: string | undefined;
  body: string;
}

type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;

class RenamedError extends InternalCallError {}

describe('InternalClient (loopback HTTP server)', () => {
  let server: Server;
  let baseUrl: string;
  let handler: Handler;
  const seen: Seen[] = [];

  before(async () => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        seen.push({ method: req.method ?? '', url: req.url ?? '', authorization: req.headers.authorization, contentType: req.headers['content-type'], body });
        handler(req, res, body);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  beforeEach(() => {
    seen.length = 0;
  });

  const answer = (status: number, body: string, type = 'application/json'): Handler => (_req, res) => {
    res.writeHead(status, { 'content-type': type });
    res.end(body);
  };
  const client = (options: { timeoutMs?: number; url?: string } = {}) =>
    new InternalClient({ service: 'thing service', baseUrl: options.url ?? baseUrl, token: TOKEN, timeoutMs: options.timeoutMs, errorClass: RenamedError });

  /** The call's rejection, which must be the client's typed error and never hold the token. */
  async function failure(call: Promise<unknown>): Promise<InternalCallError> {
    try {
      await call;
    } catch (err) {
      assert.ok(err instanceof RenamedError, `the client's error class: ${String(err)}`);
      assert.equal(err.name, 'RenamedError');
      assert.equal(err.endpoint, 'thing update');
      assert.ok(!inspect(err, { depth: 5 }).includes(TOKEN), `the token is not in ${inspect(err)}`);
      return err;
    }
    assert.fail('the call succeeded');
  }

  it('sends the bearer token and the JSON body to the encoded path, and returns the parsed answer', async () => {
    handler = answer(200, '{"thing_id":"a/b c","size":3,"extra":"ignored"}');
    const out = await client().call(thingEndpoint, { params: { thingId: 'a/b c' }, body: { size: 3 } });
    assert.deepEqual(out, { thing_id: 'a/b c', size: 3 }, 'fields outside the contract are dropped');
    assert.deepEqual(seen, [{ method: 'POST', url: '/internal/things/a%2Fb%20c/update', authorization: `Bearer ${TOKEN}`, contentType: 'application/json', body: '{"size":3}' }]);
    assert.equal(pathOf(thingEndpoint, { thingId: 'x' }), '/internal/things/x/update');
  });

  it('sends no body on a GET', async () => {
    handler = answer(200, '{"up":true}');
    assert.deepEqual(await client().call(statusEndpoint, {}), { up: true });
    assert.deepEqual([seen[0]?.method, seen[0]?.body, seen[0]?.contentType], ['GET', '', undefined]);
  });

  it('times out a call that gets no answer: no status, timedOut, the endpoint and the limit in the message', async () => {
    handler = () => undefined; // never answers
    const started = Date.now();
    const err = await failure(client({ timeoutMs: 5000 }).call(thingEndpoint, { params: { thingId: 't' }, body: { size: 1 }, timeoutMs: 150 }));
    assert.ok(Date.now() - started < 4000, 'the per-call timeout overrides the client default');
    assert.deepEqual([err.failure, err.status, err.timedOut, err.code], ['timeout', undefined, true, undefined]);
    assert.equal(err.message, 'thing service did not answer thing update (POST /internal/things/t/update) within 150 ms');
  });

  it('maps a refused connection to a network failure without a status', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const err = await failure(client({ url: `http://127.0.0.1:${port}` }).call(thingEndpoint, { params: { thingId: 't' }, body: { size: 1 } }));
    assert.deepEqual([err.failure, err.status, err.timedOut], ['network', undefined, false]);
    assert.match(err.message, /^thing service did not answer thing update \(POST \/internal\/things\/t\/update\): .*ECONNREFUSED/);
  });

  it('carries the status, code and message of a 4xx answer', async () => {
    handler = answer(404, '{"error":{"message":"The model \'m\' does not exist","type":"not_found_error","code":"model_not_found"}}');
    const err = await failure(client().call(thingEndpoint, { params: { thingId: 't' }, body: { size: 1 } }));
    assert.deepEqual([err.failure, err.status, err.timedOut, err.code, err.serverMessage], ['status', 404, false, 'model_not_found', "The model 'm' does not exist"]);
    assert.equal(err.message, "thing service answered 404 to thing update (POST /internal/things/t/update): The model 'm' does not exist");
  });

  it('quotes the start of a 5xx answer that is not JSON', async () => {
    handler = answer(502, `Bad Gateway${' '.repeat(10)}${'x'.repeat(1000)}`, 'text/plain');
    const err = await failure(client().call(thingEndpoint, { params: { thingId: 't' }, body: { size: 1 } }));
    assert.deepEqual([err.failure, err.status, err.code], ['status', 502, undefined]);
    assert.equal(err.serverMessage?.length, 300);
    assert.match(err.message, /^thing service answered 502 to thing update .*: Bad Gateway {10}x+$/);
  });

  it('refuses a 2xx whose body breaks the response schema, naming the endpoint and the field', async () => {
    handler = answer(200, '{"thing_id":"t","size":"big"}');
    const err = await failure(client().call(thingEndpoint, { params: { thingId: 't' }, body: { size: 1 } }));
    assert.deepEqual([err.failure, err.status, err.timedOut], ['invalid_response', 200, false]);
    assert.match(err.message, /^thing service answered thing update \(POST \/internal\/things\/t\/update\) with 200 and a body outside its contract: 'size' /);
    handler = answer(201, 'not json', 'text/plain');
    const notJson = await failure(client().call(thingEndpoint, { params: { thingId: 't' }, body: { size: 1 } }));
    assert.deepEqual([notJson.failure, notJson.status], ['invalid_response', 201]);
    assert.match(notJson.message, /the body is not JSON$/);
  });

  it('never repeats the token, even when the server echoes it back', async () => {
    handler = (req, res) => {
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `Invalid token: ${req.headers.authorization}`, code: 'unauthorized' } }));
    };
    const refused = await failure(client().call(thingEndpoint, { params: { thingId: 't' }, body: { size: 1 } }));
    assert.equal(refused.serverMessage, 'Invalid token: Bearer [redacted]');
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ thing_id: 't', size: TOKEN }));
    };
    const echoed = await failure(client().call(thingEndpoint, { params: { thingId: 't' }, body: { size: 1 } }));
    assert.equal(echoed.failure, 'invalid_response');
  });
});
