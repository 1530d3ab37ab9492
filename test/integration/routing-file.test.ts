/**
 * The routing file end to end (docs/routing-file.md): the local/remote split on a gateway without a
 * database (and not with one), report-only health probing of local entries, and `GET /routing`.
 */
import assert from 'node:assert/strict';
import { freshDatabase, type TestDatabase } from '../support/db';
import { closeAll, startUpstreamPair, type FakeUpstream } from '../support/fake-upstream';
import { chatModelYaml, startTestGateway, type TestGateway } from '../support/gateway';
import { seededRng } from '../../gateway/routing/weighted-order';
import type { RoutingStatusBody } from '../../gateway/surfaces/routing-status';
import { waitFor } from '../support/wait';

const N = 200;

async function chat(gw: TestGateway): Promise<void> {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
  });
  assert.equal(res.status, 200);
  await res.arrayBuffer();
}

const chats = (u: FakeUpstream) => u.requests.filter((r) => r.path === '/v1/chat/completions').length;
const probes = (u: FakeUpstream) => u.requests.filter((r) => r.path === '/health').length;

async function routing(gw: TestGateway): Promise<RoutingStatusBody> {
  const res = await fetch(`${gw.url}/routing`);
  assert.equal(res.status, 200);
  return (await res.json()) as RoutingStatusBody;
}

/** Waits (without asserting on time) until `check` holds; fails after a generous deadline. */
async function until(what: string, check: () => boolean | Promise<boolean>): Promise<void> {
  await waitFor(check, what);
}

describe('routing file (gateway)', function () {
  this.timeout(60_000);
  let a: FakeUpstream;
  let b: FakeUpstream;
  let gw: TestGateway | undefined;

  /** Model `m`: route A (weight 1, key `secret-key-a`) and route B (weight 3). */
  const modelsYaml = () => `models:\n${chatModelYaml('m', [
    `{ kind: generic_compat, base_url: "${a.url}", api_key: secret-key-a, provider: route-a }`,
    `{ kind: engine_a, base_url: "${b.url}", weight: 3, provider: route-b }`,
  ])}`;
  /** A local (through `${LOCAL_URL}`), B remote. */
  const routingYaml = (extra = '') => `local_deployment:\n  - endpoint: "\${LOCAL_URL}"\n    models: [m]\nremote_deployment:\n  - endpoint: "${b.url}"\n    models: [m]\n${extra}`;
  const env = () => ({ LOCAL_URL: a.url });

  beforeEach(async () => {
    [a, b] = await startUpstreamPair();
  });
  afterEach(async () => {
    await closeAll(gw, a, b);
    gw = undefined;
  });

  describe('without a database', () => {
    it('honours the half/half split instead of the registry weights 1:3', async () => {
      gw = await startTestGateway({ modelsYaml: modelsYaml(), routingYaml: routingYaml(), env: env(), rng: seededRng(11) });
      for (let i = 0; i < N; i += 1) await chat(gw);
      // Registry weights would send about 50 of 200 to A; the split sends about 100.
      assert.equal(chats(a) + chats(b), N);
      assert.ok(chats(a) >= 80 && chats(a) <= 120, `A answered ${chats(a)} of ${N}`);
      const body = await routing(gw);
      assert.deepEqual(body.routes.map((r) => [r.base_url, r.weight]), [[a.url, 0.5], [b.url, 0.5]]);
      assert.equal(body.manager_status.split_applied, true);
    });

    it('routing_parameter.local_fraction moves the share to the local group', async () => {
      gw = await startTestGateway({ modelsYaml: modelsYaml(), routingYaml: routingYaml('routing_parameter: { local_fraction: 0.9 }\n'), env: env(), rng: seededRng(11) });
      for (let i = 0; i < N; i += 1) await chat(gw);
      assert.ok(chats(a) >= 160, `A answered ${chats(a)} of ${N}`);
      assert.ok(gw.logs.lines.some((l) => l.level === 'warn' && /'routing_parameter' is deprecated/.test(String(l.msg))));
    });

    it('an empty models list fails the file: logged, and the registry weights route', async () => {
      gw = await startTestGateway({
        modelsYaml: modelsYaml(), routingYaml: routingYaml('  - { endpoint: "http://127.0.0.1:9/v1", models: [] }\n'), env: env(), rng: seededRng(11),
      });
      for (let i = 0; i < N; i += 1) await chat(gw);
      assert.ok(chats(a) >= 30 && chats(a) <= 70, `A answered ${chats(a)} of ${N}`);
      assert.ok(gw.logs.lines.some((l) => l.level === 'error' && String(l.msg).startsWith('RoutingManager failed to initialize')));
      const body = await routing(gw);
      assert.equal(body.manager_status.status, 'failed');
      assert.deepEqual(body.routes.map((r) => r.weight), [1, 3]);
    });

    it('an unknown default_router stops startup naming the known strategies; ENABLE_ROUTEWISE loads with a deprecation warning', async () => {
      await assert.rejects(
        startTestGateway({ modelsYaml: modelsYaml(), routingYaml: 'default_router: roundrobin\n' }),
        /unknown default_router 'roundrobin'; known strategies: fixed, routewise/,
      );
      const flagged = await startTestGateway({ modelsYaml: modelsYaml(), env: { ENABLE_ROUTEWISE: 'true' } });
      try {
        assert.ok(flagged.logs.lines.some((l) => String(l.msg).startsWith('ENABLE_ROUTEWISE is deprecated')));
      } finally {
        await flagged.close();
      }
    });
  });

  describe('with a database', () => {
    let t: TestDatabase;
    before(async () => {
      t = await freshDatabase();
    });
    after(async () => {
      await t.drop();
    });

    it('ignores the split: registry weights 1:3 route', async () => {
      gw = await startTestGateway({ modelsYaml: modelsYaml(), routingYaml: routingYaml(), env: env(), db: t.db, rng: seededRng(11) });
      for (let i = 0; i < N; i += 1) await chat(gw);
      assert.ok(chats(a) >= 30 && chats(a) <= 70, `A answered ${chats(a)} of ${N}`);
      const body = await routing(gw);
      assert.deepEqual(body.routes.map((r) => r.weight), [1, 3]);
      assert.equal(body.manager_status.split_applied, false);
      assert.equal(body.manager_status.status, 'loaded');
    });
  });

  it('probes local entries only, logs state changes at WARNING, and never changes routing', async () => {
    gw = await startTestGateway({ modelsYaml: modelsYaml(), routingYaml: routingYaml('health_check: 0.1\ntimeout: 2\n'), env: env(), rng: seededRng(3) });
    const g = gw;
    const healthOf = async () => (await routing(g)).manager_status.endpoint_health[a.url]?.status;
    await until('A healthy', async () => (await healthOf()) === 'healthy');
    a.setPathBehaviour('/health', { kind: 'status', status: 503, message: 'draining' });
    await until('A unhealthy', async () => (await healthOf()) === 'unhealthy');
    const changes = gw.logs.lines.filter((l) => l.event === 'routing_endpoint_health_changed');
    assert.deepEqual(changes.map((l) => [l.level, l.endpoint, l.from, l.to]), [['warn', a.url, 'unknown', 'healthy'], ['warn', a.url, 'healthy', 'unhealthy']]);
    const body = await routing(gw);
    assert.equal(body.manager_status.endpoint_health_enforced, false);
    assert.deepEqual(Object.keys(body.manager_status.endpoint_health), [a.url], 'the remote entry is not probed');
    assert.equal(body.manager_status.endpoint_health[a.url]!.http_status, 503);
    assert.deepEqual(body.routes.map((r) => r.weight), [0.5, 0.5], 'weights unchanged');
    for (let i = 0; i < 40; i += 1) await chat(gw);
    assert.ok(chats(a) > 0, 'the unhealthy local endpoint still serves its share');
    assert.equal(probes(b), 0);
    a.setPathBehaviour('/health', undefined);
    await until('A healthy again', async () => (await healthOf()) === 'healthy');
    assert.ok(gw.logs.lines.some((l) => l.event === 'routing_endpoint_health_changed' && l.from === 'unhealthy' && l.to === 'healthy' && l.level === 'warn'));
  });

  it('GET /routing: every published route, manager_status, no credentials and no API keys', async () => {
    gw = await startTestGateway({ modelsYaml: modelsYaml(), env: { USER_AUTH_ENABLED: 'true' } });
    const res = await fetch(`${gw.url}/routing`);
    assert.equal(res.status, 200, 'no credentials needed even with auth on');
    const text = await res.text();
    assert.ok(!text.includes('secret-key-a'), 'no API key in the body');
    const body = JSON.parse(text) as RoutingStatusBody;
    assert.equal(body.routes.length, 2);
    const [ra, rb] = body.routes;
    assert.deepEqual(Object.keys(ra!).sort(), ['base_url', 'endpoint_id', 'model', 'provider', 'route_id', 'router', 'weight']);
    assert.deepEqual([ra!.model, ra!.provider, ra!.base_url, ra!.weight, ra!.router], ['m', 'route-a', a.url, 1, 'fixed']);
    assert.deepEqual([rb!.provider, rb!.base_url, rb!.weight], ['route-b', b.url, 3]);
    assert.equal(ra!.endpoint_id, gw.deps.registry.current.byName.get('m')!.routes[0]!.endpointId);
    assert.match(body.manager_status.source_file, /config\/routing\.yaml$/);
    assert.deepEqual({ ...body.manager_status, source_file: '' }, {
      status: 'loaded', source_file: '', default_router: 'fixed', split_applied: false, local_fraction: 0.5, health_check_seconds: 0,
      endpoint_health: {}, endpoint_health_enforced: false,
    });
  });
});
