/**
 * The agent API proxy's pure rules (docs/one-origin.md): which paths are the API's, which
 * spellings are refused, and the forwarded headers for a trusted and an untrusted peer.
 */
import assert from 'node:assert/strict';
import { isAgentApiPath, nonCanonicalPath } from '../../../../gateway/agent-api/agent-api-proxy';
import { forwardedRequestHeaders, forwardedResponseHeaders } from '../../../../gateway/agent-api/forwarded-headers';
import { createClientAddressResolver } from '../../../../lib/client-address/client-address';

describe('agent API forwarding rules', () => {
  it('claims exactly the agent API paths', () => {
    for (const path of ['/v1/agent', '/v1/agent/', '/v1/agent/jobs', '/admin/agent/sandboxes', '/api/admin/agent/pgadmin', '/api/admin/agent/pgadmin/browser/']) {
      assert.equal(isAgentApiPath(path), true, path);
    }
    for (const path of ['/v1/agents', '/v1/agentx', '/v1/chat/completions', '/admin/agent', '/admin/agents/x', '/admin/users', '/api/admin/agent/pgadminx', '//v1/agent/jobs', '/V1/agent/jobs', '/']) {
      assert.equal(isAgentApiPath(path), false, path);
    }
  });

  it('refuses every non-canonical spelling and accepts canonical ones', () => {
    for (const path of ['/v1/agent/jobs', '/v1/agent/jobs/job_1/events', '/v1/agent/', '/admin/agent/runs/x/activity', '/v1/agent/variables/a%20b']) {
      assert.equal(nonCanonicalPath(path), undefined, path);
    }
    for (const path of ['/v1/agent/../admin', '/v1/agent/.', '/v1/agent/x/./y', '/v1/agent//jobs', '/v1/agent/%2e%2e/x', '/v1/agent/%2E/x', '/v1/agent/a%2Fb', '/v1/agent/a%2fb', '/v1/agent/a%5cb', '/v1/agent\\x']) {
      assert.notEqual(nonCanonicalPath(path), undefined, path);
    }
  });

  it('appends the peer to a trusted chain, replaces an untrusted one, and drops hop-by-hop headers both ways', () => {
    const resolver = createClientAddressResolver({ trustProxyHeaders: true, trustCdnHeaders: false, trustXRealIp: false, trustedProxies: ['10.0.0.0/8'], cdnNetworks: [], directClientNetworks: [] });
    const headers = { host: 'gw.example', connection: 'close, x-named', 'x-named': '1', 'x-forwarded-for': '8.8.8.8', 'x-forwarded-proto': 'https', 'x-forwarded-host': 'public.example', 'x-real-ip': '8.8.8.8', accept: 'text/event-stream' };
    const rawHeaders = Object.entries(headers).flat();
    const viaProxy = forwardedRequestHeaders({ headers, client: resolver.resolve({ peer: '10.1.1.1', rawHeaders }), requestId: 'r1', encrypted: false });
    assert.deepEqual(viaProxy, {
      accept: 'text/event-stream', 'x-forwarded-for': '8.8.8.8, 10.1.1.1', 'x-forwarded-proto': 'https', 'x-forwarded-host': 'public.example', 'x-real-ip': '8.8.8.8', 'x-request-id': 'r1',
    });
    const direct = forwardedRequestHeaders({ headers, client: resolver.resolve({ peer: '1.1.1.1', rawHeaders }), requestId: 'r2', encrypted: true });
    assert.deepEqual(direct, { accept: 'text/event-stream', 'x-forwarded-for': '1.1.1.1', 'x-forwarded-proto': 'https', 'x-forwarded-host': 'gw.example', 'x-request-id': 'r2' });
    assert.deepEqual(
      forwardedResponseHeaders({ 'content-type': 'text/event-stream', connection: 'keep-alive, x-hop', 'x-hop': '1', 'keep-alive': 'timeout=5', 'transfer-encoding': 'chunked', 'x-request-id': 'r1' }),
      { 'content-type': 'text/event-stream', 'x-request-id': 'r1' },
    );
  });
});
