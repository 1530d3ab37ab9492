/**
 * The shared text rule on request-log rows (gateway/request-log/clean-row.ts): every string of a
 * row, at any depth of `metadata` and in its keys, loses its NULs and unpaired surrogates to
 * U+FFFD; clean parts are kept by reference and the entry's own objects are never modified; the
 * row text of a clean row is its plain JSON.
 */
import assert from 'node:assert/strict';
import { buildRow } from '../../gateway/request-log/batch';
import { cleanValue, mayNeedCleaning } from '../../gateway/request-log/clean-row';
import type { RequestRecord } from '../../gateway/surfaces/request-record';
import { requestRecord, type RecordFields } from '../support/request-log-fakes';
import { toApiLogRow } from '../../gateway/request-log/row';
import type { RoutingAttribution } from '../../gateway/surfaces/request-record';
import { REPLACEMENT, textProblem } from '../../lib/text';

function entry(overrides: RecordFields = {}): RequestRecord {
  return requestRecord({
    at: Date.UTC(2026, 10, 21, 12), requestId: 'r1', path: '/v1/chat/completions', surface: undefined, status: 200, latencyMs: 3,
    firstTokenMs: undefined, errorCode: undefined, caller: { role: 'pro', via: 'api_key', userId: 7, apiKeyId: 9 }, model: 'm', stream: false,
    routing: { provider: 'p', base_url: 'http://u/v1', endpoint_id: 'ep' }, usage: { prompt_tokens: 10, completion_tokens: 2 }, pricing: undefined,
    client: undefined, numUserTurns: 1, numToolCalls: 0, lastUserMessage: 'hi', userAgent: 'curl/8', sessionId: 's', synthetic: false,
    rejection: undefined, ...overrides,
  });
}

/** Every string (values and keys) of a JSON value. */
function strings(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (value === null || typeof value !== 'object') return [];
  if (Array.isArray(value)) return value.flatMap(strings);
  return Object.entries(value).flatMap(([k, v]) => [k, ...strings(v)]);
}

describe('request log: the text rule on rows', () => {
  it('replaces NULs and unpaired surrogates in every text column and metadata value, and counts the row as cleaned', () => {
    const bad = `x\u0000y\ud800z\udc00`;
    const routing: RoutingAttribution = {
      provider: `p${'\u0000'}`, base_url: 'http://u/v1', endpoint_id: `ep\udfff`,
      failed_attempts: [{ endpoint_id: 'e1', provider: 'p1', status: 503, failure: 'http', message: bad }],
    };
    const built = buildRow(entry({
      requestId: `r${'\u0000'}`, model: bad, surface: `s\ud800`, errorCode: `code\u0000`, userAgent: `ua ${bad}`, sessionId: bad, routing,
      client: { client_ip: bad, peer_ip: '127.0.0.1', source: 'x_forwarded_for', resolved: false, reason: bad } as unknown as RequestRecord['client'],
      rejection: { reason: bad, credentialState: bad },
    }));
    assert.equal(built.cleaned, true);
    const fixed = `x${REPLACEMENT}y${REPLACEMENT}z${REPLACEMENT}`;
    assert.equal(built.row.model, fixed);
    assert.equal(built.row.request_id, `r${REPLACEMENT}`);
    assert.equal(built.row.surface, `s${REPLACEMENT}`);
    assert.equal(built.row.error_code, `code${REPLACEMENT}`);
    assert.equal(built.row.provider, `p${REPLACEMENT}`);
    assert.equal(built.row.endpoint_id, `ep${REPLACEMENT}`);
    const meta = built.row.metadata as { user_agent: string; session_id: string; client: { client_ip: string; reason: string }; routing: RoutingAttribution; rejection: string; credential_state: string };
    assert.deepEqual([meta.user_agent, meta.session_id, meta.client.client_ip, meta.client.reason, meta.rejection, meta.credential_state], [`ua ${fixed}`, fixed, fixed, fixed, fixed, fixed]);
    assert.equal(meta.routing.failed_attempts![0]!.message, fixed);
    assert.deepEqual(strings(JSON.parse(built.text)).filter((s) => textProblem(s) !== undefined), [], 'no bad string left in the stored text');
    assert.equal(built.text, JSON.stringify(built.row));
    assert.equal(routing.failed_attempts![0]!.message, bad, "the request's own attribution is not modified");
    assert.equal(routing.provider, `p${'\u0000'}`);
  });

  it('cleans a session id cut in the middle of a surrogate pair', () => {
    const built = buildRow(entry({ sessionId: `${'s'.repeat(255)}😀` }));
    assert.equal((built.row.metadata as { session_id: string }).session_id, `${'s'.repeat(255)}${REPLACEMENT}`);
  });

  it('leaves a clean row as it is: the same text as its plain JSON, not counted', () => {
    const plain = entry({ model: 'emoji 😀 𝄞 — "quoted" \\ back', userAgent: 'tab\tand\u0001control' });
    const built = buildRow(plain);
    assert.equal(built.cleaned, false);
    assert.deepEqual(JSON.parse(built.text), JSON.parse(JSON.stringify(toApiLogRow(plain, () => built.row.log_id))));
    assert.equal(mayNeedCleaning(JSON.stringify({ a: 'plain' })), false);
  });

  it('keeps clean parts by reference, copies changed parts, and cleans object keys', () => {
    const clean = { a: ['x', { b: 'y' }], c: 1, d: null, e: true };
    assert.equal(cleanValue(clean), clean);
    const inner = { ok: 'fine' };
    const mixed = { keep: inner, list: ['a', 'b\u0000'], [`k\ud800`]: 'v' };
    const out = cleanValue(mixed) as Record<string, unknown>;
    assert.notEqual(out, mixed);
    assert.equal(out.keep, inner, 'the clean branch is shared');
    assert.deepEqual(out.list, ['a', `b${REPLACEMENT}`]);
    assert.equal(out[`k${REPLACEMENT}`], 'v');
    assert.equal(Object.keys(out).includes(`k\ud800`), false);
    assert.deepEqual(mixed.list, ['a', 'b\u0000'], 'the input is not modified');
  });
});
