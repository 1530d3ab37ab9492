/**
 * Client addresses in the gateway's request lines (docs/client-address.md): forwarded headers honoured
 * only from trusted proxies, the unresolved event, the masked DEBUG header line, startup errors.
 */
import assert from 'node:assert/strict';
import { startFakeUpstream, type FakeUpstream } from '../support/fake-upstream';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { waitFor } from '../support/wait';

describe('gateway client addresses', function () {
  this.timeout(20_000);
  let up: FakeUpstream;
  let gw: TestGateway | undefined;
  before(async () => {
    up = await startFakeUpstream();
  });
  after(async () => {
    await up.close();
  });
  afterEach(async () => {
    await gw?.close();
    gw = undefined;
  });

  const models = () => `models:\n  - { id: m, name: M, provider: generic_compat, base_url: "${up.url}" }\n`;
  const chat = (headers: Record<string, string>) => fetch(`${gw!.url}/v1/chat/completions`, {
    method: 'POST', headers, body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x' }] }),
  }).then(async (r) => { await r.text(); return r; });
  const line = (requestId: string) => waitFor(() => gw!.logs.lines.find((l) => l.event === 'http_request' && l.request_id === requestId), `the http_request line of ${requestId}`);

  it('takes the client from X-Forwarded-For when the peer is a trusted proxy, with the 6.4 fields', async () => {
    gw = await startTestGateway({ modelsYaml: models(), env: { TRUST_PROXY_HEADERS: '1', TRUSTED_PROXIES: '127.0.0.1/32' } });
    await chat({ 'x-request-id': 'xff-1', 'x-forwarded-for': '8.8.8.8, 127.0.0.1', 'user-agent': 'curl/8', referer: 'https://app.example/' });
    const l = await line('xff-1');
    assert.equal(l?.remote_ip, '8.8.8.8');
    assert.equal(l?.ip_source, 'x_forwarded_for');
    assert.equal(l?.peer_ip, '127.0.0.1');
    assert.equal(l?.x_forwarded_for, '8.8.8.8, 127.0.0.1');
    assert.equal(l?.user_agent, 'curl/8');
    assert.equal(l?.referer, 'https://app.example/');
    assert.equal(l?.status, 200);
  });

  it('ignores forwarding headers from an untrusted peer and logs the unresolved address at debug', async () => {
    gw = await startTestGateway({ modelsYaml: models() });
    await chat({ 'x-request-id': 'plain-1', 'x-forwarded-for': '8.8.8.8' });
    const l = await line('plain-1');
    assert.equal(l?.remote_ip, 'unknown', 'a loopback peer is not routable');
    assert.equal(l?.ip_source, 'socket');
    assert.equal(l?.x_forwarded_for, '8.8.8.8', 'the raw header is still recorded');
    assert.ok(l && !('origin' in l) && !('x_real_ip' in l), 'absent headers are left out of the line');
    assert.ok(gw.logs.lines.some((x) => x.event === 'client_ip_resolution_unresolved' && x.level === 'debug'));
  });

  it('counts a peer in TRUSTED_DIRECT_CLIENT_NETWORKS as the client, on Koa routes too', async () => {
    gw = await startTestGateway({ modelsYaml: models(), env: { TRUSTED_DIRECT_CLIENT_NETWORKS: '127.0.0.0/8' } });
    await fetch(`${gw.url}/health`, { headers: { 'x-request-id': 'health-1' } }).then((r) => r.text());
    const l = await line('health-1');
    assert.equal(l?.remote_ip, '127.0.0.1');
    assert.equal(l?.ip_source, 'direct_client_network');
  });

  it('logs every header at DEBUG, cut to 256 characters, credentials masked', async () => {
    gw = await startTestGateway({ modelsYaml: models() });
    await chat({ 'x-request-id': 'dbg-1', authorization: 'Bearer sk-secret-1', 'x-api-key': 'k-secret-2', 'x-long': 'y'.repeat(400) });
    const headers = (await waitFor(() => gw!.logs.lines.find((l) => l.event === 'http_request_headers' && l.request_id === 'dbg-1'), 'the headers line')).headers as Record<string, string>;
    assert.equal(headers.authorization, '***');
    assert.equal(headers['x-api-key'], '***');
    assert.equal(headers['x-long']?.length, 256);
    assert.ok(!JSON.stringify(gw.logs.lines).includes('secret'));
  });

  it('stops startup on an invalid trusted-proxy CIDR or a TRUST flag without its networks, naming the variable', async () => {
    await assert.rejects(startTestGateway({ env: { TRUST_PROXY_HEADERS: '1', TRUSTED_PROXIES: '10.0.0.0/33' } }), /TRUSTED_PROXIES/);
    await assert.rejects(startTestGateway({ env: { TRUST_CDN_HEADERS: '1' } }), /TRUST_PROXY_HEADERS/);
    await assert.rejects(startTestGateway({ env: { TRUST_PROXY_HEADERS: '1', TRUST_CDN_HEADERS: '1', TRUSTED_PROXIES: '10.0.0.0/8' } }), /TRUSTED_CLOUDFLARE_NETWORKS/);
    await assert.rejects(startTestGateway({ env: { TRUST_X_REAL_IP: '1' } }), /TRUST_PROXY_HEADERS/);
  });
});
