/**
 * `GET /metrics` on a real gateway (docs/metrics.md), against PostgreSQL and fake upstreams on
 * loopback: real requests move the request counters and the latency histogram by exactly their
 * number under the right labels (surface, model, provider, status class), upstream answers are
 * counted per provider and status (a fallback counts both attempts), unknown model names are
 * `unknown`, circuit states, outbound concurrency (by key id, never the key) and the request
 * log's queue, drops and spool are read at scrape time. Access: 401 without or with a wrong
 * credential, 200 with `METRICS_TOKEN` or `ADMIN_TOKEN`. A gateway whose database is unreachable
 * still answers a scrape. The exposition is parsed with a Prometheus text-format parser.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import parsePrometheusTextFormat, { type PrometheusFamily, type PrometheusSample } from 'parse-prometheus-text-format';
import { createDb } from '../../lib/db';
import { freshDatabaseForBlock, type TestDatabase } from '../support/db';
import { closeAll, startFakeUpstream, startUpstreamPair, type FakeUpstream } from '../support/fake-upstream';
import { chatModelYaml, startTestGateway, type TestGateway } from '../support/gateway';

const METRICS_TOKEN = 'metrics-token-for-tests';
const ADMIN_TOKEN = 'admin-token-for-tests';

type Scrape = Map<string, PrometheusFamily>;

async function scrape(gw: TestGateway, token = METRICS_TOKEN): Promise<Scrape> {
  const res = await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${token}` } });
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  // The parser (1.1.1) folds every series of a labelled histogram into one: its lines are read
  // as untyped samples instead (`<name>_bucket`, `<name>_sum`, `<name>_count`, labels intact).
  const text = (await res.text()).replace(/^# TYPE (\S+) histogram$/gm, '# TYPE $1 untyped');
  const families: Scrape = new Map();
  for (const f of parsePrometheusTextFormat(text)) {
    const seen = families.get(f.name);
    if (seen) seen.metrics.push(...f.metrics);
    else families.set(f.name, f);
  }
  return families;
}

/** The sample of `name` whose labels include `labels`, or undefined. */
function sample(s: Scrape, name: string, labels: Record<string, string>): PrometheusSample | undefined {
  return s.get(name)?.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));
}

/** A counter's or gauge's value (0 when the series does not exist yet). */
function value(s: Scrape, name: string, labels: Record<string, string> = {}): number {
  return Number(sample(s, name, labels)?.value ?? 0);
}

function histogramCount(s: Scrape, labels: Record<string, string>): number {
  return value(s, 'gateway_request_duration_seconds_count', labels);
}

describe('gateway metrics (GET /metrics)', function () {
  this.timeout(30_000);
  let t: TestDatabase;
  let a: FakeUpstream;
  let b: FakeUpstream;
  let gw: TestGateway;

  freshDatabaseForBlock((db) => {
    t = db;
  });
  before(async () => {
    [a, b] = await startUpstreamPair();
    gw = await startTestGateway({
      db: t.db, rng: () => 0, concurrencyExemptHosts: [],
      env: { METRICS_TOKEN, ADMIN_TOKEN, REQUEST_LOG_FLUSH_INTERVAL_MS: '20' },
      modelsYaml: `models:
  - id: m
    name: M
    aliases: [m-alias]
    route:
      - { kind: generic_compat, base_url: "${a.url}", api_key: key-a, provider: route-a }
      - { kind: generic_compat, base_url: "${b.url}", provider: route-b }
`,
    });
  });
  after(async () => {
    await closeAll(gw, a, b);
  });

  const chat = (model: string) => fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
  }).then(async (res) => {
    await res.arrayBuffer();
    return res.status;
  });

  it('counts requests, latency, upstream answers and unknown models under bounded labels', async () => {
    const before = await scrape(gw);
    const okLabels = { surface: 'chat', model: 'm', provider: 'route-a', status_class: '2xx' };
    assert.equal(await chat('m'), 200);
    assert.equal(await chat('m'), 200);
    assert.equal(await chat('m-alias'), 200, 'an alias counts under its model id');
    assert.equal(await chat('no-such-model-xyz'), 404);
    a.enqueue({ kind: 'status', status: 500 });
    assert.equal(await chat('m'), 200, 'route-a fails, route-b answers');
    const after = await scrape(gw);

    assert.equal(value(after, 'gateway_requests_total', okLabels) - value(before, 'gateway_requests_total', okLabels), 3);
    assert.equal(histogramCount(after, okLabels) - histogramCount(before, okLabels), 3);
    assert.equal(value(after, 'gateway_request_duration_seconds_bucket', { ...okLabels, le: '+Inf' }), histogramCount(after, okLabels), 'the +Inf bucket holds every request');
    assert.ok(Number(sample(after, 'gateway_request_duration_seconds_sum', okLabels)?.value) > 0, 'latency adds up');
    const unknown = { surface: 'chat', model: 'unknown', provider: 'none', status_class: '4xx' };
    assert.equal(value(after, 'gateway_requests_total', unknown) - value(before, 'gateway_requests_total', unknown), 1);
    const fallback = { surface: 'chat', model: 'm', provider: 'route-b', status_class: '2xx' };
    assert.equal(value(after, 'gateway_requests_total', fallback) - value(before, 'gateway_requests_total', fallback), 1);
    assert.ok(!after.get('gateway_requests_total')!.metrics.some((m) => m.labels?.model === 'no-such-model-xyz'), 'client strings are not labels');

    const upstream = (provider: string, status: string) => value(after, 'gateway_upstream_responses_total', { provider, status })
      - value(before, 'gateway_upstream_responses_total', { provider, status });
    assert.deepEqual([upstream('route-a', '2xx'), upstream('route-a', '500'), upstream('route-b', '2xx')], [3, 1, 1]);
  });

  it('reads circuit states, outbound concurrency by key id and the request log at scrape time', async () => {
    assert.equal(await chat('m'), 200);
    a.enqueue({ kind: 'status', status: 503 });
    assert.equal(await chat('m'), 200, 'route-b answers: its lane exists too');
    const s = await scrape(gw);
    const circuits = s.get('gateway_circuit_breaker_state')!.metrics;
    assert.deepEqual(circuits.map((m) => m.labels?.provider).sort(), ['route-a', 'route-b']);
    assert.ok(circuits.every((m) => m.value === '0'), 'closed circuits are 0');

    const keyId = createHash('sha256').update('key-a').digest('hex').slice(0, 12);
    const limit = sample(s, 'gateway_upstream_concurrency_limit', { provider: 'route-a', key_id: keyId });
    assert.ok(limit && Number(limit.value) >= 1, 'the lane of route-a\'s key, named by its key id');
    assert.equal(value(s, 'gateway_upstream_concurrency_in_flight', { provider: 'route-a', key_id: keyId }), 0);
    assert.ok(sample(s, 'gateway_upstream_concurrency_limit', { provider: 'route-b', key_id: 'none' }), 'a keyless route: key_id none');

    for (const name of ['gateway_request_log_queue_depth', 'gateway_request_log_dropped_total', 'gateway_request_log_spool_bytes']) {
      assert.ok(s.has(name), name);
    }
    assert.equal(value(s, 'gateway_request_log_dropped_total'), 0);

    const text = await (await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).text();
    assert.ok(!text.includes('key-a'), 'the key itself is never exported');
  });

  it('answers 401 without a valid credential and 200 with METRICS_TOKEN or ADMIN_TOKEN', async () => {
    for (const headers of [{}, { authorization: 'Bearer wrong' }, { authorization: 'Basic YTpi' }] as Array<Record<string, string>>) {
      const res = await fetch(`${gw.url}/metrics`, { headers });
      assert.equal(res.status, 401, JSON.stringify(headers));
      const body = await res.text();
      assert.ok(!body.includes('gateway_requests_total'), 'no metrics in a refusal');
    }
    assert.ok((await scrape(gw, METRICS_TOKEN)).has('gateway_requests_total'));
    assert.ok((await scrape(gw, ADMIN_TOKEN)).has('gateway_requests_total'));
  });

  it('answers a scrape while its database is unreachable', async () => {
    // Nothing listens on port 1: every connection is refused, as during an outage.
    const db = createDb({ url: 'postgres://nobody:nothing@127.0.0.1:1/none', poolMax: 1, applicationName: 'metrics-outage-test' });
    const upstream = await startFakeUpstream();
    const down = await startTestGateway({
      db, env: { METRICS_TOKEN },
      modelsYaml: `models:\n${chatModelYaml('m', [`{ kind: generic_compat, base_url: "${upstream.url}", provider: local }`])}`,
    });
    try {
      assert.equal(await fetch(`${down.url}/v1/chat/completions`, {
        method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x' }] }),
      }).then((r) => r.status), 200);
      const s = await scrape(down);
      assert.equal(value(s, 'gateway_requests_total', { surface: 'chat', model: 'm', provider: 'local', status_class: '2xx' }), 1);
      assert.ok(s.has('gateway_request_log_queue_depth'));
    } finally {
      await closeAll(down, upstream);
      await db.destroy();
    }
  });
});
