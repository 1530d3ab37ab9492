/**
 * Client headers on their way into log lines (docs/security.md, text hygiene): the request id is
 * the client's only when it is short and plain, and the DEBUG header dump is cleaned. Node's own
 * parser refuses control characters in header values, so the cleaning is checked on a request
 * built by hand.
 */
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { loggableHeaders, requestIdFrom } from '../../../../lib/http/request-context';

describe('request context', () => {
  it('replaces a request id that fails the text rule, is not plain ASCII or is too long', () => {
    for (const bad of ['a\u0000b', 'a\ud800b', 'Ã©té', 'x'.repeat(129), '']) {
      const id = requestIdFrom(bad);
      assert.notEqual(id, bad);
      assert.match(id, /^[0-9a-f-]{36}$/);
    }
    assert.equal(requestIdFrom('req-1.2:3_x'), 'req-1.2:3_x');
    assert.match(requestIdFrom(['a', 'b']), /^[0-9a-f-]{36}$/, 'a repeated header is not trusted');
  });

  it('cleans header values in the DEBUG header dump and masks credentials', () => {
    const req = { rawHeaders: ['User-Agent', 'ua\u0000x\ud800', 'Authorization', 'Bearer sk-secret', 'X-Note', 'plain'] } as unknown as IncomingMessage;
    assert.deepEqual(loggableHeaders(req), { 'user-agent': 'ua\uFFFDx\uFFFD', authorization: '***', 'x-note': 'plain' });
  });
});
