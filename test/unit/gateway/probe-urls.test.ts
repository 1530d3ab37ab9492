/**
 * Where verification probes go (gateway/runtime-config/probe.ts, gateway/adapters/probe-urls.ts):
 * a one-token completion in the kind's own wire format, or the upstream's model listing; the
 * cloud message-format variant lists no models and says so instead of probing a made-up path.
 */
import assert from 'node:assert/strict';
import { probeUpstream, probeUrl } from '../../../gateway/runtime-config/probe';

describe('verification probe URLs', () => {
  it('chat kinds: the chat path with a model, the model listing beside it without', () => {
    assert.equal(probeUrl({ kind: 'generic_compat', baseUrl: 'http://h/v1', apiKey: undefined, providerModelId: 'm' }), 'http://h/v1/chat/completions');
    assert.equal(probeUrl({ kind: 'generic_compat', baseUrl: 'http://h', apiKey: undefined }), 'http://h/v1/models');
  });

  it('message-format kinds: the messages path with a model; the listing of the direct and G kinds, none for the cloud variant', () => {
    assert.equal(probeUrl({ kind: 'vendor_h_direct', baseUrl: 'http://h', apiKey: undefined, providerModelId: 'm' }), 'http://h/v1/messages');
    assert.equal(probeUrl({ kind: 'vendor_g_api', baseUrl: 'http://h/v1', apiKey: undefined }), 'http://h/v1/models');
    assert.equal(probeUrl({ kind: 'vendor_h_cloud', baseUrl: 'http://h/p', apiKey: undefined, providerModelId: 'm@1' }), 'http://h/p/models/m@1:rawPredict');
    assert.equal(probeUrl({ kind: 'vendor_h_cloud', baseUrl: 'http://h/p', apiKey: undefined }), undefined);
  });

  it('a cloud variant probed without a model answers why, sending nothing', async () => {
    const result = await probeUpstream({ kind: 'vendor_h_cloud', baseUrl: 'http://127.0.0.1:9/p', apiKey: 'secret-key-value' });
    assert.deepEqual([result.ok, result.probe, result.status], [false, 'models', null]);
    assert.match(result.error ?? '', /lists no models: verify with a model/);
    assert.equal(JSON.stringify(result).includes('secret-key-value'), false);
  });
});
