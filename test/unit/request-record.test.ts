/**
 * The request record (gateway/surfaces/request-record.ts): one object per inference request with
 * one shape (every field present from the constructor), sealed by `end` when the response has
 * ended: status (499 with `client_disconnected` when the client left first), end time and
 * latency, the two logged headers, and the rejection label of a refused request.
 */
import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { RequestRecord } from '../../gateway/surfaces/request-record';
import { captureLogs } from '../support/logs';

const log = captureLogs('record', 'fatal').log;

function request(headers: Record<string, string> = {}): IncomingMessage {
  return { headers } as unknown as IncomingMessage;
}

function response(status: number, options: { clientLeft?: boolean } = {}): ServerResponse {
  return { statusCode: status, destroyed: options.clientLeft === true, writableEnded: options.clientLeft !== true } as ServerResponse;
}

const caller = { role: 'pro' as const, via: 'api_key' as const, userId: 1, apiKeyId: 2 };

describe('request record', () => {
  it('has every field from its constructor, the surface named by its path', () => {
    const a = new RequestRecord('r1', log, '/v1/chat/completions', undefined, 0);
    const b = new RequestRecord('r2', log, '/p/v1/messages/count_tokens', undefined, 0);
    assert.deepEqual(Object.keys(a), Object.keys(b), 'one shape');
    assert.ok(Object.keys(a).includes('firstTokenMs') && Object.keys(a).includes('images'));
    assert.equal(a.surface, 'chat');
    assert.equal(b.surface, '/p/v1/messages/count_tokens', 'a path without a surface name is named as it is');
  });

  it('seals status, times and the logged headers when the response has ended', () => {
    const record = new RequestRecord('r1', log, '/v1/chat/completions', undefined, performance.now() - 50);
    record.caller = caller;
    const before = Date.now();
    record.end(request({ 'user-agent': 'codex/1', 'x-session-id': 's-9', authorization: 'Bearer sk-secret' }), response(200));
    assert.equal(record.status, 200);
    assert.ok(record.latencyMs >= 50);
    assert.ok(record.at >= before && record.at <= Date.now());
    assert.deepEqual([record.userAgent, record.sessionId, record.errorCode, record.rejection, record.rejected], ['codex/1', 's-9', undefined, undefined, false]);
  });

  it('records a client that left first as 499 client_disconnected', () => {
    const record = new RequestRecord('r1', log, '/v1/chat/completions', undefined, performance.now());
    record.caller = caller;
    record.end(request(), response(200, { clientLeft: true }));
    assert.deepEqual([record.status, record.errorCode], [499, 'client_disconnected']);
  });

  it('labels a refused request: the label auth code set, else missing or invalid key, else its error code', () => {
    const missing = new RequestRecord('r1', log, '/v1/chat/completions', undefined, 0);
    missing.end(request(), response(401));
    assert.deepEqual(missing.rejection, { reason: 'missing_api_key', credentialState: 'missing' });
    const invalid = new RequestRecord('r2', log, '/v1/chat/completions', undefined, 0);
    invalid.end(request({ authorization: 'Bearer nope' }), response(401));
    assert.deepEqual(invalid.rejection, { reason: 'invalid_api_key', credentialState: 'unknown' });
    const labelled = new RequestRecord('r3', log, '/v1/chat/completions', undefined, 0);
    labelled.rejection = { reason: 'ip_blocked', credentialState: 'valid' };
    labelled.end(request(), response(429));
    assert.deepEqual(labelled.rejection, { reason: 'ip_blocked', credentialState: 'valid' });
    const other = new RequestRecord('r4', log, '/v1/chat/completions', undefined, 0);
    other.errorCode = 'invalid_request';
    other.end(request(), response(405));
    assert.deepEqual([other.rejection, other.rejected], [{ reason: 'invalid_request' }, true]);
  });
});
