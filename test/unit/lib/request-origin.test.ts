/**
 * The `http_request` header fields pass the text rule on their way into the log line
 * (docs/security.md): a bad character becomes U+FFFD, and a clean value is kept as it is.
 */
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { clientAddressResolverFrom, requestLogFields } from '../../../lib/client-address/request-origin';
import { loadSettings } from '../../../lib/settings';

describe('request origin log fields', () => {
  it('cleans the client headers it logs and cuts them to 256 characters', () => {
    const client = clientAddressResolverFrom(loadSettings({})).resolve({ peer: '127.0.0.1', rawHeaders: [] });
    const headers = { 'user-agent': 'agent\u0000/1', 'x-session-id': ['s\ud800', 't'], referer: 'r'.repeat(300), host: 'gw.example' };
    const fields = requestLogFields(client, { headers } as unknown as IncomingMessage);
    assert.equal(fields.user_agent, 'agent\uFFFD/1');
    assert.equal(fields.session_id, 's\uFFFD, t');
    assert.equal(fields.referer, 'r'.repeat(256));
    assert.equal(fields.host, 'gw.example');
  });
});
