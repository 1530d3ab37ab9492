/**
 * A NUL or an unpaired surrogate in any logged field costs no row (issue 25, item 3): mixed into
 * thousands of ordinary requests through a real gateway and PostgreSQL, in the model name asked
 * for, in an upstream's error message that reaches `metadata.routing.failed_attempts`, and in the
 * `User-Agent`, `X-Session-Id` and forwarded-address values a request hands the log (HTTP/1.1
 * itself refuses a NUL in a header, which is checked too). Every request the gateway answered has
 * exactly one row, and the stored text carries U+FFFD where the bad character was.
 */
import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { connect } from 'node:net';
import { requestRecord } from '../support/request-log-fakes';
import type { ClientIpInfo } from '../../lib/client-address/client-address';
import { REPLACEMENT } from '../../lib/text';
import { freshDatabaseForBlock, type TestDatabase } from '../support/db';
import { closeAll, startFakeUpstream, type FakeUpstream } from '../support/fake-upstream';
import { chatModelYaml, startTestGateway, type TestGateway } from '../support/gateway';
import { waitFor } from '../support/wait';

const GOOD_REQUESTS = 3000;
const CONCURRENCY = 32;
const NUL = '\u0000';
const LONE_HIGH = '\ud800';
const LONE_LOW = '\udc00';

interface StoredRow {
  request_id: string;
  status: number;
  model: string | null;
  metadata: { user_agent?: string; session_id?: string; routing?: { failed_attempts?: Array<{ message: string }> }; client?: { client_ip?: string } };
}

describe('request log: NUL and unpaired surrogates among thousands of requests', function () {
  this.timeout(120_000);
  let t: TestDatabase;
  let good: FakeUpstream;
  let nulError: FakeUpstream;
  let surrogateError: FakeUpstream;
  let gw: TestGateway;

  freshDatabaseForBlock((db) => {
    t = db;
  });
  before(async () => {
    good = await startFakeUpstream();
    nulError = await startFakeUpstream();
    surrogateError = await startFakeUpstream();
    // Two upstreams that always fail with a bad error message; their models fall back to the good one.
    nulError.setDefault({ kind: 'status', status: 503, message: `engine${NUL}failed` });
    // 299 characters and an emoji: the attribution's 300-character cut leaves its high surrogate alone.
    surrogateError.setDefault({ kind: 'status', status: 503, message: `${'e'.repeat(299)}😀 and ${LONE_LOW}` });
    gw = await startTestGateway({
      db: t.db, rng: () => 0,
      env: { REQUEST_LOG_FLUSH_INTERVAL_MS: '100' },
      modelsYaml: `models:\n${chatModelYaml('m', [`{ kind: generic_compat, base_url: "${good.url}", provider: good }`])}`
        + `${chatModelYaml('via-nul', [`{ kind: generic_compat, base_url: "${nulError.url}", provider: nul }`, `{ kind: generic_compat, base_url: "${good.url}", provider: good }`])}`
        + `${chatModelYaml('via-surrogate', [`{ kind: generic_compat, base_url: "${surrogateError.url}", provider: surrogate }`, `{ kind: generic_compat, base_url: "${good.url}", provider: good }`])}`,
    });
  });
  after(async () => {
    await closeAll(gw, good, nulError, surrogateError);
  });

  /** Sends one chat request; resolves with the request id the gateway answered with, or undefined when it did not answer. */
  async function chat(id: string, model: string): Promise<{ requestId: string | null; status: number }> {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json', 'x-request-id': id },
      body: JSON.stringify({ model, messages: [{ role: 'user', content: `question ${id}` }] }),
    });
    await res.arrayBuffer();
    return { requestId: res.headers.get('x-request-id'), status: res.status };
  }

  /** What the request log receives for a request whose headers carried `headers` (HTTP/1.1 cannot deliver these bytes). */
  function finishWithHeaders(requestId: string, headers: Record<string, string>, clientIp: string): void {
    const record = requestRecord({
      requestId, caller: { role: 'pro', via: 'api_key', userId: 1, apiKeyId: 2 }, model: 'm',
      client: { client_ip: clientIp, peer_ip: '127.0.0.1', source: 'x_forwarded_for', resolved: true, reason: null } as unknown as ClientIpInfo,
    });
    record.end({ headers } as unknown as IncomingMessage, { destroyed: false, writableEnded: true, statusCode: 200 } as ServerResponse);
    gw.deps.requestLog!.finish(record);
  }

  /** A raw HTTP/1.1 request whose User-Agent holds a NUL: Node's parser answers 400 itself, before the gateway sees it. */
  function rawRequestWithNulHeader(): Promise<string> {
    const { port } = new URL(gw.url);
    return new Promise((resolve, reject) => {
      const socket = connect(Number(port), '127.0.0.1', () => {
        socket.end(`POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nUser-Agent: a${NUL}b\r\nContent-Length: 2\r\n\r\n{}`);
      });
      let answer = '';
      socket.on('data', (chunk: Buffer) => (answer += chunk.toString('latin1')));
      socket.on('close', () => resolve(answer));
      socket.on('error', reject);
    });
  }

  it('stores one row per answered request, with U+FFFD where a field held a NUL or an unpaired surrogate', async () => {
    const bad: Array<{ id: string; model: string }> = [
      { id: 'bad-model-nul', model: `m${NUL}x` },
      { id: 'bad-model-high', model: `m${LONE_HIGH}x` },
      { id: 'bad-model-low', model: `${LONE_LOW}m` },
      { id: 'bad-upstream-nul-1', model: 'via-nul' },
      { id: 'bad-upstream-nul-2', model: 'via-nul' },
      { id: 'bad-upstream-surrogate-1', model: 'via-surrogate' },
      { id: 'bad-upstream-surrogate-2', model: 'via-surrogate' },
    ];
    const headerCases: Array<{ id: string; headers: Record<string, string>; ip: string }> = [
      { id: 'bad-ua-nul', headers: { 'user-agent': `claude-cli/1.0${NUL}`, 'x-session-id': 's' }, ip: '203.0.113.7' },
      { id: 'bad-ua-surrogate', headers: { 'user-agent': `agent ${LONE_HIGH}`, 'x-session-id': 's' }, ip: '203.0.113.7' },
      { id: 'bad-session-nul', headers: { 'x-session-id': `sess${NUL}1` }, ip: '203.0.113.7' },
      // 255 characters and an emoji: the 256-character cut of the session id leaves a lone high surrogate.
      { id: 'bad-session-cut', headers: { 'x-session-id': `${'s'.repeat(255)}😀` }, ip: '203.0.113.7' },
      { id: 'bad-client-ip', headers: {}, ip: `203.0.113.7${NUL}${LONE_LOW}` },
    ];
    // The bad requests are spread through the ordinary ones, so they share batches with good rows.
    const plan: Array<{ id: string; model: string }> = Array.from({ length: GOOD_REQUESTS }, (_, i) => ({ id: `good-${i}`, model: 'm' }));
    bad.forEach((b, i) => plan.splice(Math.floor(((i + 1) * GOOD_REQUESTS) / (bad.length + 1)), 0, b));

    const answered: string[] = [];
    const statusOf = new Map<string, number>();
    let next = 0;
    let headerCase = 0;
    await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
      while (next < plan.length) {
        const { id, model } = plan[next++]!;
        const { requestId, status } = await chat(id, model);
        if (requestId !== null) {
          answered.push(requestId);
          statusOf.set(requestId, status);
        }
        if (next % 500 === 0 && headerCase < headerCases.length) {
          const c = headerCases[headerCase++]!;
          finishWithHeaders(c.id, c.headers, c.ip);
        }
      }
    }));
    for (; headerCase < headerCases.length; headerCase += 1) finishWithHeaders(headerCases[headerCase]!.id, headerCases[headerCase]!.headers, headerCases[headerCase]!.ip);

    const refused = await rawRequestWithNulHeader();
    assert.match(refused, /^HTTP\/1\.1 400 /, 'Node refuses a NUL in a header before the gateway sees the request');
    assert.doesNotMatch(refused, /x-request-id/i, 'so the gateway never answered it (and logs nothing for it)');

    assert.equal(answered.length, plan.length, 'the gateway answered every request');
    assert.equal(new Set(answered).size, answered.length);
    const expected = answered.length + headerCases.length;
    const count = async (): Promise<number> => Number((await t.db('api_logs').count<Array<{ count: string }>>('* as count'))[0]!.count);
    await waitFor(async () => (await count()) >= expected, `${expected} rows`, 60_000);
    const perRequest = await t.db('api_logs').select('request_id').count<Array<{ request_id: string; count: string }>>('* as count').groupBy('request_id');
    assert.equal(perRequest.length, expected, 'a row for every answered request and every header case');
    assert.deepEqual(perRequest.filter((r) => Number(r.count) !== 1), [], 'no request has two rows');
    const stored = new Set(perRequest.map((r) => r.request_id));
    assert.deepEqual(answered.filter((id) => !stored.has(id)), [], 'no answered request is missing');
    assert.equal(gw.deps.requestLog!.writer.counters.failedWrites, 0, 'no batch failed');

    const rows = new Map((await t.db('api_logs').whereLike('request_id', 'bad-%').select<StoredRow[]>('request_id', 'status', 'model', 'metadata')).map((r) => [r.request_id, r]));
    const row = (id: string): StoredRow => rows.get(id) ?? assert.fail(`no row for ${id}`);
    for (const { id } of bad) assert.equal(row(id).status, statusOf.get(id), `${id}: the status sent`);
    assert.equal(row('bad-model-nul').model, `m${REPLACEMENT}x`);
    assert.equal(row('bad-model-high').model, `m${REPLACEMENT}x`);
    assert.equal(row('bad-model-low').model, `${REPLACEMENT}m`);
    for (const id of ['bad-upstream-nul-1', 'bad-upstream-nul-2']) {
      assert.equal(statusOf.get(id), 200, 'the fallback answered');
      assert.equal(row(id).metadata.routing?.failed_attempts?.[0]?.message, `engine${REPLACEMENT}failed`);
    }
    for (const id of ['bad-upstream-surrogate-1', 'bad-upstream-surrogate-2']) {
      assert.equal(row(id).metadata.routing?.failed_attempts?.[0]?.message, `${'e'.repeat(299)}${REPLACEMENT}`);
    }
    assert.equal(row('bad-ua-nul').metadata.user_agent, `claude-cli/1.0${REPLACEMENT}`);
    assert.equal(row('bad-ua-surrogate').metadata.user_agent, `agent ${REPLACEMENT}`);
    assert.equal(row('bad-session-nul').metadata.session_id, `sess${REPLACEMENT}1`);
    assert.equal(row('bad-session-cut').metadata.session_id, `${'s'.repeat(255)}${REPLACEMENT}`);
    assert.equal(row('bad-client-ip').metadata.client?.client_ip, `203.0.113.7${REPLACEMENT}${REPLACEMENT}`);
    assert.equal(gw.deps.requestLog!.writer.counters.cleaned, bad.length + headerCases.length, 'each bad row counted once as cleaned');
  });
});
