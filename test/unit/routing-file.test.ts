/**
 * The routing file (docs/routing-file.md): schema and defaults, expansion at any depth, deprecated spellings,
 * validation failures, the default router (with `ENABLE_ROUTEWISE`), and the local/remote split.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { registryBuildContext, STRATEGIES } from '../../gateway/registry';
import { RegistryConfigError } from '../../gateway/registry/errors';
import { loadRegistry } from '../../gateway/registry/loader';
import { BUNDLED_CONFIG_DIR } from '../../gateway/registry/paths';
import type { Registry } from '../../gateway/registry/types';
import { prepareRoutingFile, routingFileExclusions, SPLIT_REASON } from '../../gateway/routing-file';
import { expandDeep, expandString } from '../../gateway/routing-file/expand';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { EndpointHealthProbe, healthUrl } from '../../gateway/routing-file/health-probe';
import { loadRoutingFile, type RoutingFileState } from '../../gateway/routing-file/load';
import { DEFAULT_ROUTING_FILE, type RoutingFileConfig } from '../../gateway/routing-file/schema';
import { applyDefaultRouter, applyLocalRemoteSplit } from '../../gateway/routing-file/split';
import { captureLogs } from '../support/logs';

const dir = mkdtempSync(join(tmpdir(), 'routing-file-'));
let n = 0;
function file(name: string, text: string): string {
  n += 1;
  const path = join(dir, `${n}-${name}`);
  writeFileSync(path, text);
  return path;
}

const ONLY_FIXED = { known: STRATEGIES, available: new Set(['fixed']) };
const WITH_ROUTEWISE = { known: STRATEGIES, available: new Set(['fixed', 'routewise']) };

async function load(yaml: string, options: { env?: Record<string, string>; enableRoutewise?: boolean; strategies?: typeof ONLY_FIXED } = {}) {
  const { log, lines } = captureLogs('gateway', 'debug');
  const state = loadRoutingFile({
    path: { path: file('routing.yaml', yaml), source: 'env' }, env: options.env ?? {}, log,
    enableRoutewise: options.enableRoutewise ?? false, strategies: options.strategies ?? ONLY_FIXED,
  });
  await settle(log);
  return { state, lines, messages: lines.map((l) => String(l.msg)) };
}

/** Log lines reach the capture asynchronously. */
async function settle(log: { flush(): void }): Promise<void> {
  log.flush();
  await new Promise((resolve) => setTimeout(resolve, 10));
}

/** Messages logged at one level. */
const at = (lines: Array<Record<string, unknown>>, level: 'info' | 'warn' | 'error') => lines.filter((l) => l.level === level).map((l) => String(l.msg));

function registry(yaml: string): Registry {
  const { log } = captureLogs();
  const ctx = { ...registryBuildContext({}), availableStrategies: new Set(['fixed', 'routewise']) };
  return loadRegistry({ path: { path: file('models.yaml', yaml), source: 'env' }, log, ...ctx });
}

const route = (url: string, extra = '') => `      - { kind: engine_a, base_url: "${url}"${extra} }\n`;
const model = (id: string, routes: string[], extra = '') => `  - id: ${id}\n    name: ${id}\n${extra}    route:\n${routes.join('')}`;
const L1 = 'http://local-1:8000/v1';
const L2 = 'http://local-2:8000/v1';
const R1 = 'https://remote-1.example/v1';

function config(over: Partial<RoutingFileConfig>): RoutingFileConfig {
  return { ...DEFAULT_ROUTING_FILE, ...over };
}
const weights = (reg: Registry, id: string) => reg.byName.get(id)!.routes.map((r) => r.weight);
const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

describe('routing file', () => {
  describe('schema and loading', () => {
    it('applies the documented defaults to an empty file and to the bundled file', async () => {
      assert.deepEqual(DEFAULT_ROUTING_FILE, {
        default_router: 'fixed', timeout: 2, health_check: 0, local_deployment: [], remote_deployment: [], logging: {}, local_fraction: 0.5,
      });
      const empty = await load('');
      assert.equal(empty.state.status, 'loaded');
      assert.deepEqual(empty.state.config, DEFAULT_ROUTING_FILE);
      assert.equal(empty.state.defaultRouter, 'fixed');
      const { log } = captureLogs();
      const bundled = loadRoutingFile({ path: { path: join(BUNDLED_CONFIG_DIR, 'routing.yaml'), source: 'default' }, env: {}, log, enableRoutewise: false, strategies: ONLY_FIXED });
      assert.equal(bundled.status, 'loaded');
      assert.deepEqual(bundled.config, DEFAULT_ROUTING_FILE);
    });

    it('a missing file is a warning and the defaults apply', async () => {
      const { log, lines } = captureLogs();
      const state = loadRoutingFile({ path: { path: join(dir, 'absent.yaml'), source: 'env' }, env: {}, log, enableRoutewise: false, strategies: ONLY_FIXED });
      await settle(log);
      assert.equal(state.status, 'not_found');
      assert.deepEqual(state.config, DEFAULT_ROUTING_FILE);
      assert.ok(at(lines, 'warn').some((m) => m.startsWith(`Routing config not found: ${join(dir, 'absent.yaml')}`)));
    });

    it('expands ${VAR}, ${VAR:-default} and embedded variables at any depth, keeping keys and non-strings', () => {
      const env = { HOST: 'gpu-1', EMPTY: '', NAME: 'm' };
      assert.equal(expandString('http://${HOST}:${PORT:-8000}/v1', env), 'http://gpu-1:8000/v1');
      assert.equal(expandString('${EMPTY:-fallback}', env), 'fallback', ':- applies to an empty variable');
      assert.equal(expandString('a${UNSET}b', env), 'ab', 'unset without default expands to nothing');
      assert.equal(expandString('$HOST and {HOST}', env), '$HOST and {HOST}', 'only ${…} is a reference');
      assert.deepEqual(expandDeep({ '${HOST}': [{ deep: ['x-${NAME}', 3, true, null, { deeper: '${HOST:-no}' }] }] }, env), {
        '${HOST}': [{ deep: ['x-m', 3, true, null, { deeper: 'gpu-1' }] }],
      });
    });

    it('loads a file whose entries, lists and numbers come from the environment', async () => {
      const { state } = await load([
        'default_router: ${ROUTER:-fixed}',
        'timeout: "${PROBE_TIMEOUT:-5}"',
        'health_check: ${PROBE_EVERY}',
        'local_deployment:',
        '  - endpoint: http://${LOCAL_HOST}:${LOCAL_PORT:-8000}/v1',
        '    models: ["${MODEL}", "prefix-${MODEL}"]',
        'logging: { level: "${LOG:-info}", nested: { list: ["${MODEL}"] } }',
      ].join('\n'), { env: { LOCAL_HOST: 'gpu-1', MODEL: 'm', PROBE_EVERY: '15' } });
      assert.equal(state.status, 'loaded');
      assert.equal(state.config.default_router, 'fixed');
      assert.equal(state.config.timeout, 5);
      assert.equal(state.config.health_check, 15);
      assert.deepEqual(state.config.local_deployment, [{ endpoint: 'http://gpu-1:8000/v1', models: ['m', 'prefix-m'] }]);
      assert.deepEqual(state.config.logging, { level: 'info', nested: { list: ['m'] } });
    });

    it('loads the deprecated spellings with a deprecation warning each; keys without effect get an info line', async () => {
      const { state, lines } = await load([
        'routing_strategy: fixed',
        'routing_parameter: { local_fraction: 0.25, other: 1 }',
        'local_fraction: 0.9',
        'extra_section: { a: 1 }',
      ].join('\n'));
      assert.equal(state.status, 'loaded');
      assert.equal(state.config.default_router, 'fixed');
      assert.equal(state.config.local_fraction, 0.25, 'only routing_parameter.local_fraction sets the share');
      const warnings = at(lines, 'warn');
      assert.ok(warnings.some((m) => /'routing_strategy' is deprecated; rename it to 'default_router'/.test(m)), warnings.join('\n'));
      assert.ok(warnings.some((m) => /'routing_parameter' is deprecated/.test(m)));
      const infos = at(lines, 'info');
      for (const key of ['routing_parameter.other', "'local_fraction'", "'extra_section'"]) {
        assert.ok(infos.some((m) => m.includes(key) && m.includes('accepted without effect')), `${key} in ${infos.join('\n')}`);
      }
    });

    it('default_router beats the deprecated routing_strategy, with a warning', async () => {
      const { state, messages } = await load('default_router: fixed\nrouting_strategy: routewise\n');
      assert.equal(state.defaultRouter, 'fixed');
      assert.ok(messages.some((m) => /'routing_strategy' is deprecated and ignored because 'default_router' is also set/.test(m)));
    });

    const good = 'local_deployment:\n  - { endpoint: "http://ok:1/v1", models: [m] }\n';
    for (const [name, yaml, reason] of [
      ['an empty models list', `${good}  - { endpoint: "http://a:1/v1", models: [] }\n`, /'local_deployment\.1\.models': must list at least one model/],
      ['a missing models list', `${good}remote_deployment:\n  - { endpoint: "http://a:1/v1" }\n`, /'remote_deployment\.0\.models'/],
      ['an endpoint that is not http(s)', `${good}remote_deployment:\n  - { endpoint: "ftp://a/v1", models: [m] }\n`, /must start with 'http:\/\/' or 'https:\/\/'/],
      ['a local_fraction above 1', `${good}routing_parameter: { local_fraction: 1.5 }\n`, /'local_fraction'/],
      ['invalid YAML', `${good}remote_deployment: [\n`, /not valid YAML/],
    ] as const) {
      it(`fails the whole file on ${name}: logged RoutingManager failed to initialize, defaults apply`, async () => {
        const { state, lines } = await load(`health_check: 30\n${yaml}`);
        assert.equal(state.status, 'failed');
        assert.deepEqual(state.config, DEFAULT_ROUTING_FILE, 'nothing of a failed file applies');
        assert.match(state.failure ?? '', reason);
        const errors = at(lines, 'error');
        assert.equal(errors.length, 1);
        assert.match(errors[0]!, /^RoutingManager failed to initialize: /);
      });
    }

    it('drops alone, with a warning, an entry whose endpoint expands to empty', async () => {
      const { state, lines } = await load([
        'local_deployment:',
        '  - { endpoint: "${UNSET_HOST}", models: [m] }',
        '  - { endpoint: "http://kept:1/v1", models: [m] }',
        'remote_deployment:',
        '  - { endpoint: "${ALSO_UNSET:-}", models: [] }',
      ].join('\n'));
      assert.equal(state.status, 'loaded', 'a dropped entry is not validated (its empty models do not fail the file)');
      assert.deepEqual(state.config.local_deployment, [{ endpoint: 'http://kept:1/v1', models: ['m'] }]);
      assert.deepEqual(state.config.remote_deployment, []);
      const warnings = at(lines, 'warn');
      assert.ok(warnings.some((m) => /local_deployment\[0\] dropped: its endpoint expanded to an empty value/.test(m)));
      assert.ok(warnings.some((m) => /remote_deployment\[0\] dropped/.test(m)));
    });

    it('an unknown default_router stops startup listing the known strategies', async () => {
      await assert.rejects(load('default_router: roundrobin\n'), (err: unknown) => {
        assert.ok(err instanceof RegistryConfigError);
        assert.match(err.message, /unknown default_router 'roundrobin'; known strategies: fixed, routewise/);
        return true;
      });
    });
  });

  describe('default router and ENABLE_ROUTEWISE', () => {
    it('ENABLE_ROUTEWISE=true stops startup while the cost-aware strategy is not installed', async () => {
      await assert.rejects(load('default_router: fixed\n', { enableRoutewise: true }), /ENABLE_ROUTEWISE=true selects the cost-aware strategy 'routewise', but the cost-aware strategy is not installed/);
      await assert.rejects(load('default_router: routewise\n'), /the cost-aware strategy is not installed/);
    });

    it('ENABLE_ROUTEWISE=true makes routewise the default when default_router is fixed, with a deprecation warning', async () => {
      const { state, lines } = await load('default_router: fixed\n', { enableRoutewise: true, strategies: WITH_ROUTEWISE });
      assert.equal(state.defaultRouter, 'routewise');
      assert.ok(at(lines, 'warn').some((m) => /ENABLE_ROUTEWISE is deprecated/.test(m)));
      assert.equal((await load('default_router: fixed\n', { strategies: WITH_ROUTEWISE })).state.defaultRouter, 'fixed', 'off: default_router as written');
    });

    it('the default router applies to models that name none; fixed changes nothing', () => {
      const reg = registry(`models:\n${model('a', [route(L1)])}${model('b', [route(L1)], '    router: fixed\n')}`);
      assert.equal(applyDefaultRouter(reg, 'fixed'), reg);
      const routed = applyDefaultRouter(reg, 'routewise');
      assert.notEqual(routed, reg);
      assert.equal(routed.byName.get('a')!.router, 'routewise');
      assert.equal(routed.byName.get('b'), reg.byName.get('b'), 'a model naming its router keeps it (and its identity)');
      assert.equal(reg.byName.get('a')!.router, undefined, 'the input registry is not mutated');
    });
  });

  describe('local/remote split', () => {
    const entries = { local_deployment: [{ endpoint: L1, models: ['m'] }, { endpoint: L2, models: ['m'] }], remote_deployment: [{ endpoint: R1, models: ['m'] }] };
    const base = () => registry(`models:\n${model('m', [route(L1), route(L2), route(R1, ', weight: 7')])}${model('n', [route(L1, ', weight: 3'), route(R1)])}`);

    it('gives each group half the traffic, spread evenly, summing to 1.0; unmatched models keep registry weights', () => {
      const reg = base();
      const { registry: split, adjustments } = applyLocalRemoteSplit(reg, config(entries), 'fixed');
      assert.deepEqual(weights(split, 'm'), [0.25, 0.25, 0.5]);
      assert.equal(sum(weights(split, 'm')), 1);
      assert.equal(split.byName.get('n'), reg.byName.get('n'), 'n is listed in no entry: untouched');
      assert.deepEqual(weights(reg, 'm'), [1, 1, 7], 'the input registry is not mutated');
      assert.deepEqual(adjustments.map((a) => [a.group, a.configuredWeight, a.effectiveWeight, a.reasons]), [
        ['local', 1, 0.25, [SPLIT_REASON]], ['local', 1, 0.25, [SPLIT_REASON]], ['remote', 7, 0.5, [SPLIT_REASON]],
      ]);
      assert.ok(adjustments.every((a) => a.modelId === 'm' && a.endpointId && a.routeId.startsWith('m#')));
    });

    it('routing_parameter.local_fraction sets the local share', () => {
      const { registry: split } = applyLocalRemoteSplit(base(), config({ ...entries, local_fraction: 0.8 }), 'fixed');
      assert.deepEqual(weights(split, 'm').map((w) => Math.round(w * 1e9) / 1e9), [0.4, 0.4, 0.2]);
      assert.ok(Math.abs(sum(weights(split, 'm')) - 1) < 1e-12);
    });

    it('one group empty: the other gets everything; a split model route matching no entry gets 0 with a reason', () => {
      const { registry: split, adjustments } = applyLocalRemoteSplit(base(), config({ local_deployment: entries.local_deployment, local_fraction: 0.1 }), 'fixed');
      assert.deepEqual(weights(split, 'm'), [0.5, 0.5, 0]);
      assert.deepEqual(adjustments[2]!.reasons, [SPLIT_REASON, 'route matches no routing-file deployment entry']);
      const remoteOnly = applyLocalRemoteSplit(base(), config({ remote_deployment: entries.remote_deployment }), 'fixed').registry;
      assert.deepEqual(weights(remoteOnly, 'm'), [0, 0, 1]);
    });

    it('matches on exact base_url and the model (id or alias) named in the entry', () => {
      const reg = registry(`models:\n${model('m', [route(L1), route(R1)], '    aliases: [m-alias]\n')}`);
      const near = applyLocalRemoteSplit(reg, config({ local_deployment: [{ endpoint: `${L1}/`, models: ['m'] }] }), 'fixed');
      assert.equal(near.registry, reg, 'a trailing slash is not an exact match');
      const other = applyLocalRemoteSplit(reg, config({ local_deployment: [{ endpoint: L1, models: ['other'] }] }), 'fixed');
      assert.equal(other.registry, reg, 'the endpoint serves another model');
      const alias = applyLocalRemoteSplit(reg, config({ local_deployment: [{ endpoint: L1, models: ['m-alias'] }], remote_deployment: [{ endpoint: R1, models: ['m'] }] }), 'fixed');
      assert.deepEqual(weights(alias.registry, 'm'), [0.5, 0.5]);
      assert.equal(alias.registry.byName.get('m-alias'), alias.registry.byName.get('m'), 'aliases resolve to the split model');
    });

    it('splits only models routed fixed (own router or the default); configured weight 0 stays out', () => {
      const reg = registry(`models:\n${model('m', [route(L1), route(R1)], '    router: routewise\n')}${model('d', [route(L1), route(R1)])}${model('z', [route(L1), route(L2, ', weight: 0'), route(R1)])}`);
      const all = [{ endpoint: L1, models: ['m', 'd', 'z'] }, { endpoint: L2, models: ['z'] }];
      const cfg = config({ local_deployment: all, remote_deployment: [{ endpoint: R1, models: ['m', 'd', 'z'] }] });
      const byFixed = applyLocalRemoteSplit(reg, cfg, 'fixed').registry;
      assert.deepEqual(weights(byFixed, 'm'), [1, 1], 'router routewise: registry weights');
      assert.deepEqual(weights(byFixed, 'd'), [0.5, 0.5]);
      assert.deepEqual(weights(byFixed, 'z'), [0.5, 0, 0.5], 'the weight-0 route is not part of the local group');
      const byRoutewise = applyLocalRemoteSplit(applyDefaultRouter(reg, 'routewise'), cfg, 'routewise').registry;
      assert.deepEqual(weights(byRoutewise, 'd'), [1, 1], 'default router routewise: d is not split');
    });
  });

  describe('prepareRoutingFile', () => {
    const modelsYaml = `models:\n${model('m', [route(L1), route(R1, ', weight: 3')])}`;
    async function prepare(routingYaml: string, databaseConfigured: boolean): Promise<{ registry: Registry; state: RoutingFileState; exclusions: ReturnType<typeof routingFileExclusions>; messages: string[] }> {
      const { log, lines } = captureLogs();
      const out = prepareRoutingFile({
        registry: registry(modelsYaml), settings: { ROUTING_CONFIG_PATH: file('routing.yaml', routingYaml), ENABLE_ROUTEWISE: false },
        env: { LOCAL: L1 }, cwd: dir, log, distribution: { status: 'none' }, databaseConfigured,
      });
      await settle(log);
      return { registry: out.registry, state: out.routingFile.state, exclusions: routingFileExclusions(out.routingFile), messages: lines.map((l) => String(l.msg)) };
    }
    const split = `local_deployment:\n  - { endpoint: "\${LOCAL}", models: [m] }\nremote_deployment:\n  - { endpoint: "${R1}", models: [m] }\n`;

    it('without a database the split sets the weights and is listed as exclusion reasons', async () => {
      const out = await prepare(split, false);
      assert.deepEqual(weights(out.registry, 'm'), [0.5, 0.5]);
      assert.deepEqual(out.exclusions.map((e) => [e.baseUrl, e.configuredWeight, e.effectiveWeight, e.reasons]), [[L1, 1, 0.5, [SPLIT_REASON]], [R1, 3, 0.5, [SPLIT_REASON]]]);
    });

    it('with a database the split is never computed: registry weights', async () => {
      const out = await prepare(split, true);
      assert.deepEqual(weights(out.registry, 'm'), [1, 3]);
      assert.deepEqual(out.exclusions, []);
      assert.ok(out.messages.some((m) => /split not applied: with a database/.test(m)));
    });

    it('a file failing on an empty models list leaves the registry weights in force', async () => {
      const out = await prepare(`${split}  - { endpoint: "http://other:1/v1", models: [] }\n`, false);
      assert.equal(out.state.status, 'failed');
      assert.deepEqual(weights(out.registry, 'm'), [1, 3]);
      assert.deepEqual(out.exclusions, []);
      assert.ok(out.messages.some((m) => m.startsWith('RoutingManager failed to initialize')));
    });
  });

  describe('health probe', () => {
    it('probes the origin of an endpoint plus /health', () => {
      assert.equal(healthUrl('http://gpu-1:8000/v1'), 'http://gpu-1:8000/health');
      assert.equal(healthUrl('https://h.example/some/base/'), 'https://h.example/health');
    });

    it('is off with health_check 0 or no local entry; reports nothing then', () => {
      const { log } = captureLogs();
      const local = [{ endpoint: 'http://127.0.0.1:9/v1', models: ['m'] }];
      assert.equal(new EndpointHealthProbe({ config: { local_deployment: local, timeout: 2, health_check: 0 }, log }).enabled, false);
      const none = new EndpointHealthProbe({ config: { local_deployment: [], timeout: 2, health_check: 5 }, log });
      assert.equal(none.enabled, false);
      assert.deepEqual(none.snapshot(), {});
    });

    it('marks 2xx healthy and anything else unhealthy, logging each change once at WARNING', async () => {
      const statuses = [200, 200, 503, 503, 204];
      const paths: string[] = [];
      const server = createServer((req, res) => {
        paths.push(req.url ?? '');
        res.writeHead(statuses.shift() ?? 500).end();
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
      const { log, lines } = captureLogs();
      const probe = new EndpointHealthProbe({ config: { local_deployment: [{ endpoint, models: ['m'] }], timeout: 5, health_check: 60 }, log, now: () => new Date('2026-01-01T00:00:00Z') });
      try {
        assert.equal(probe.snapshot()[endpoint]!.status, 'unknown');
        const seen: string[] = [];
        for (let i = 0; i < 5; i += 1) {
          await probe.probeAll();
          seen.push(probe.snapshot()[endpoint]!.status);
        }
        assert.deepEqual(seen, ['healthy', 'healthy', 'unhealthy', 'unhealthy', 'healthy']);
        assert.deepEqual(paths, ['/health', '/health', '/health', '/health', '/health']);
        assert.deepEqual(probe.snapshot()[endpoint], { url: healthUrl(endpoint), status: 'healthy', checked_at: '2026-01-01T00:00:00.000Z', http_status: 204, error: null });
        await settle(log);
        const changes = lines.filter((l) => l.event === 'routing_endpoint_health_changed').map((l) => [l.level, l.from, l.to]);
        assert.deepEqual(changes, [['warn', 'unknown', 'healthy'], ['warn', 'healthy', 'unhealthy'], ['warn', 'unhealthy', 'healthy']]);
      } finally {
        await probe.stop();
        server.close();
      }
    });

    it('a refused connection is unhealthy with the error; after stop it does not start again', async () => {
      const { log } = captureLogs();
      const endpoint = 'http://127.0.0.1:9/v1';
      const probe = new EndpointHealthProbe({ config: { local_deployment: [{ endpoint, models: ['m'] }], timeout: 5, health_check: 60 }, log });
      await probe.probeAll();
      const health = probe.snapshot()[endpoint]!;
      assert.equal(health.status, 'unhealthy');
      assert.equal(health.http_status, null);
      assert.ok(health.error);
      await probe.stop();
      probe.start();
      await probe.probeAll();
      assert.equal(probe.snapshot()[endpoint]!.checked_at, health.checked_at, 'a stopped probe records nothing');
    });
  });

  it('warns that the older ROUTING_CONFIG name is deprecated', async () => {
    const { log, lines } = captureLogs();
    loadRoutingFile({ path: { path: file('routing.yaml', ''), source: 'env_legacy' }, env: {}, log, enableRoutewise: false, strategies: ONLY_FIXED });
    await settle(log);
    assert.ok(at(lines, 'warn').some((m) => m === 'ROUTING_CONFIG is deprecated; rename it to ROUTING_CONFIG_PATH'));
  });
});
