/**
 * `POST /v1/embeddings` as an ordered fallback chain at each route's embeddings path, and
 * `GET /v1/models` with aliases, `on_demand` and role visibility.
 */
import assert from 'node:assert/strict';
import { closeAll, startFakeUpstream, startUpstreamPair, type FakeUpstream } from '../support/fake-upstream';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { waitFor } from '../support/wait';

describe('embeddings and model list', function () {
  this.timeout(20_000);
  let a: FakeUpstream;
  let b: FakeUpstream;
  let gw: TestGateway | undefined;
  beforeEach(async () => {
    [a, b] = await startUpstreamPair();
  });
  afterEach(async () => {
    await closeAll(gw, a, b);
    gw = undefined;
  });

  const embed = (body: unknown) => fetch(`${gw!.url}/v1/embeddings`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

  it('tries routes in configured order at their embeddings paths, skipping weight 0', async () => {
    const c = await startFakeUpstream();
    try {
      gw = await startTestGateway({
        modelsYaml: `models:
  - id: e
    name: E
    model_type: embedding
    provider_model_id: up-embed
    route:
      - { kind: generic_compat, base_url: "${c.url}", weight: 0 }
      - { kind: generic_compat, base_url: "${a.origin}/", embeddings_path: "/custom/embed" }
      - { kind: engine_b, base_url: "${b.origin}" }
`,
      });
      a.enqueue({ kind: 'status', status: 500 });
      const res = await embed({ model: 'e', input: 'text' });
      assert.equal(res.status, 200);
      assert.equal(((await res.json()) as { data: unknown[] }).data.length, 1);
      assert.deepEqual(a.requests.map((r) => r.path), ['/custom/embed']);
      assert.deepEqual(b.requests.map((r) => r.path), ['/v1/embeddings'], 'a base without /v1 gets /v1/embeddings');
      assert.deepEqual(b.requests[0]?.body, { model: 'up-embed', input: 'text' });
      assert.equal(c.requests.length, 0);
    } finally {
      await c.close();
    }
  });

  it('logs "Embedding request failed for model=..." on an upstream 401 and surfaces 401', async () => {
    gw = await startTestGateway({ modelsYaml: `models:\n  - { id: e, name: E, model_type: embedding, provider: generic_compat, base_url: "${a.url}" }\n` });
    a.enqueue({ kind: 'status', status: 401 });
    const res = await embed({ model: 'e', input: ['x'] });
    assert.equal(res.status, 401);
    await waitFor(() => gw!.logs.lines.some((l) => String(l.msg).startsWith('Embedding request failed for model=e')), 'the embedding failure line');
  });

  it('rejects bad embeddings input and chat models with 400', async () => {
    gw = await startTestGateway({ modelsYaml: `models:\n  - { id: c, name: C, provider: generic_compat, base_url: "${a.url}" }\n  - { id: e, name: E, model_type: embedding, provider: generic_compat, base_url: "${a.url}" }\n` });
    for (const body of [{ input: 'x' }, { model: 'e' }, { model: 'e', input: '' }, { model: 'e', input: [1, 'a'] }, { model: 'c', input: 'x' }]) {
      assert.equal((await embed(body)).status, 400, JSON.stringify(body));
    }
    assert.equal(a.requests.length, 0);
  });

  it('lists ids and aliases with on_demand; role-restricted models only for admins', async () => {
    const yaml = `models:
  - { id: pub, name: Pub, provider: engine_a, base_url: "${a.url}", aliases: [pub-alias], on_demand: true }
  - { id: secret, name: Secret, provider: engine_a, base_url: "${a.url}", admin_only: true }
  - { id: pro, name: Pro, provider: engine_a, base_url: "${a.url}", required_role: pro }
`;
    gw = await startTestGateway({ modelsYaml: yaml });
    type Listing = { data: Array<{ id: string; on_demand: boolean; alias_of?: string; aliases?: string[] }> };
    const asAdmin = (await (await fetch(`${gw.url}/v1/models`)).json()) as Listing;
    assert.deepEqual(asAdmin.data.map((m) => m.id).sort(), ['pro', 'pub', 'pub-alias', 'secret']);
    const pub = asAdmin.data.find((m) => m.id === 'pub');
    assert.equal(pub?.on_demand, true);
    assert.deepEqual(pub?.aliases, ['pub-alias']);
    assert.equal(asAdmin.data.find((m) => m.id === 'pub-alias')?.alias_of, 'pub');
    await gw.close();
    gw = await startTestGateway({ modelsYaml: yaml, env: { USER_AUTH_ENABLED: 'true' } });
    const anonymous = (await (await fetch(`${gw.url}/v1/models`, { headers: { authorization: 'Bearer unknown' } })).json()) as Listing;
    assert.deepEqual(anonymous.data.map((m) => m.id).sort(), ['pub', 'pub-alias']);
  });

  it('lists nothing and reports every model not found when the models file is missing', async () => {
    gw = await startTestGateway({ modelsYaml: 'models: []\n' });
    assert.deepEqual(await (await fetch(`${gw.url}/v1/models`)).json(), { object: 'list', data: [] });
    const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', body: JSON.stringify({ model: 'any', messages: [{ role: 'user', content: 'x' }] }) });
    assert.equal(res.status, 404);
  });
});
