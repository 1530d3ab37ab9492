/**
 * The event content cap (docs/agent-admin.md "Event content"): the JSON text cut to at most the
 * cap in UTF-8 bytes, never inside a character, and the path's ids checked.
 */
import assert from 'node:assert/strict';
import { capPayload, cutUtf8, EVENT_CONTENT_CAP_BYTES, parseContentIds } from '../../../../agent/events/event-content';
import { isAppError } from '../../../../lib/errors';

describe('event content cap', () => {
  it('is 256 KiB', () => {
    assert.equal(EVENT_CONTENT_CAP_BYTES, 262_144);
  });

  it('keeps text within the limit whole, and cuts longer text to exactly the limit when it ends on a character', () => {
    assert.equal(cutUtf8('abc', 3), 'abc');
    assert.equal(cutUtf8('abcd', 3), 'abc');
    assert.equal(cutUtf8('', 0), '');
    assert.equal(cutUtf8('a', 0), '');
  });

  it('never splits a 2-, 3- or 4-byte character: it is dropped whole when it straddles the cut', () => {
    for (const char of ['é', '✓', '😀']) {
      const size = Buffer.byteLength(char);
      const text = `ab${char}cd`;
      assert.equal(cutUtf8(text, 2 + size), `ab${char}`, `${char} ending at the cut is kept`);
      for (let limit = 2; limit < 2 + size; limit++) assert.equal(cutUtf8(text, limit), 'ab', `${char} with the cut at byte ${limit}`);
    }
    for (let limit = 0; limit <= 20; limit++) {
      const cut = cutUtf8('é✓😀é✓😀', limit);
      assert.ok(Buffer.byteLength(cut) <= limit);
      assert.ok(!cut.includes('\uFFFD') && !/[\uD800-\uDBFF]$/.test(cut), `whole characters only at ${limit}`);
      assert.ok('é✓😀é✓😀'.startsWith(cut));
    }
  });

  it('returns the value when its JSON text fits, else the cut text with truncated and the full size', () => {
    assert.deepEqual(capPayload({ a: 'é' }, 10), { payload: { a: 'é' }, truncated: false, payload_bytes: 10 });
    assert.deepEqual(capPayload({ a: 'éé' }, 10), { payload: '{"a":"éé', truncated: true, payload_bytes: 12 });
    assert.deepEqual(capPayload({ a: 'éé' }, 9), { payload: '{"a":"é', truncated: true, payload_bytes: 12 });
    assert.deepEqual(capPayload({}, 1), { payload: '{', truncated: true, payload_bytes: 2 });
  });

  it('accepts job ids of the job shape and event ids 1..2^63-1 (leading zeros dropped), else 400 naming the parameter', () => {
    const job = 'job_abcdefghijklmnopqrst';
    assert.deepEqual(parseContentIds(job, '0042'), { jobId: job, eventId: '42' });
    assert.deepEqual(parseContentIds(job, '9223372036854775807'), { jobId: job, eventId: '9223372036854775807' });
    const refused = (jobId: string, eventId: string, param: string) => assert.throws(
      () => parseContentIds(jobId, eventId),
      (err: unknown) => isAppError(err) && err.status === 400 && err.param === param,
      `${jobId.slice(0, 30)} ${eventId}`,
    );
    for (const bad of ['', '0', '-1', '+1', ' 1', '1 ', '1.0', '1e3', '0x1', '9223372036854775808', '1'.repeat(20), '١']) refused(job, bad, 'eventId');
    for (const bad of ['', 'job_', 'job_ABCDEFGHIJKLMNOPQRST', `${job}a`, 'grp_abcdefghijklmnopqrst', 'job_abcdefghijklmnopqrs1']) refused(bad, '1', 'jobId');
  });
});
