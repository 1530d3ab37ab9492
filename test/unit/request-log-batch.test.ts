/**
 * Batch building for the request log: rows and their JSON texts agree, the batch JSON is the rows'
 * JSON, a spool stores the given texts, and building yields to the event loop once a slice's
 * time is spent, however large each row's user message is.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { batchJsonBytes, buildBatch, serializeRows } from '../../gateway/request-log/batch';
import type { RequestRecord } from '../../gateway/surfaces/request-record';
import { Spool } from '../../gateway/request-log/spool';
import { requestRecord } from '../support/request-log-fakes';

function entry(n: number, lastUserMessage: unknown = `message ${n}`): RequestRecord {
  return requestRecord({
    at: Date.UTC(2026, 10, 21, 12, 0, 0, n), requestId: `r${n}`, path: '/v1/chat/completions', surface: undefined, status: 200, latencyMs: n,
    firstTokenMs: undefined, errorCode: undefined, caller: { role: 'pro', via: 'api_key', userId: 7, apiKeyId: 9 }, model: 'm', stream: false,
    routing: { provider: 'p', base_url: 'http://u/v1', endpoint_id: 'ep' }, usage: { prompt_tokens: 10, completion_tokens: 2 }, pricing: undefined,
    client: undefined, numUserTurns: 1, numToolCalls: 0, lastUserMessage, userAgent: 'claude-cli/1.0', sessionId: undefined, synthetic: false,
    rejection: undefined,
  });
}

describe('request log: batch building', () => {
  it('builds one row per entry, in order, with each text the JSON of its row', async () => {
    const batch = await buildBatch(Array.from({ length: 30 }, (_, i) => entry(i)));
    assert.deepEqual(batch.rows.map((r) => r.request_id), Array.from({ length: 30 }, (_, i) => `r${i}`));
    assert.equal(batch.texts.length, 30);
    batch.rows.forEach((row, i) => assert.equal(batch.texts[i], JSON.stringify(row)));
    assert.deepEqual(batchJsonBytes(batch), Buffer.from(JSON.stringify(batch.rows)));
  });

  it('encodes the batch JSON as UTF-8 whatever the text fields hold: accents, symbols, astral characters, lone surrogates', async () => {
    const values = ['café — naïve', '✓ done', 'emoji 😀 and 𝄞', 'lone \ud800 surrogate', '', 'quote " and backslash \\ and \\u0000 spelled out'];
    const batch = await buildBatch(values.map((v, i) => Object.assign(entry(i), { model: v, userAgent: v, sessionId: v })));
    assert.equal(batch.rows[2]!.model, 'emoji 😀 and 𝄞', 'the values reach the rows');
    assert.equal(batch.rows[3]!.model, 'lone \ufffd surrogate', 'a lone surrogate is replaced (the shared text rule)');
    assert.equal(batch.rows[5]!.model, values[5], 'a backslash before "u0000" is text, kept as it is');
    assert.equal(batch.cleaned, 1);
    const bytes = batchJsonBytes(batch);
    assert.deepEqual(bytes, Buffer.from(JSON.stringify(batch.rows), 'utf8'));
    assert.deepEqual(JSON.parse(bytes.toString('utf8')), JSON.parse(JSON.stringify(batch.rows)));
  });

  it('serializes rows already built (a replayed spool segment) without changing them', async () => {
    const built = await buildBatch([entry(1), entry(2)]);
    const again = await serializeRows(built.rows);
    assert.deepEqual(again.rows, built.rows);
    assert.deepEqual(again.texts, built.texts);
    assert.equal(batchJsonBytes(await serializeRows([])).toString(), '[]');
    assert.equal(batchJsonBytes(await serializeRows([built.rows[0]!])).toString(), `[${built.texts[0]!}]`);
  });

  it('yields to the event loop while building rows whose messages are large', async () => {
    // Each row reads a 4 MiB message (its shape and hash): well over a slice of work per row.
    const big = 'x'.repeat(4 * 1024 * 1024);
    let turns = 0;
    let counting = true;
    const count = (): void => {
      turns += 1;
      if (counting) setImmediate(count);
    };
    setImmediate(count);
    const batch = await buildBatch([entry(1, big), entry(2, big), entry(3, big), entry(4, big)]);
    counting = false;
    assert.equal(batch.rows.length, 4);
    assert.equal(batch.rows[0]!.user_message_chars, big.length);
    assert.ok(turns >= 3, `the event loop turned between rows (${turns} turns)`);
  });

  it('a spool stores the given texts and reads back the same rows', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rl-batch-'));
    try {
      const spool = new Spool({ dir, maxBytes: 1024 * 1024 });
      await spool.open();
      const batch = await buildBatch([entry(1), entry(2), entry(3)]);
      assert.equal(await spool.append(batch), 3);
      const segment = await spool.oldest();
      assert.ok(segment);
      assert.deepEqual(segment.rows, JSON.parse(JSON.stringify(batch.rows)));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
