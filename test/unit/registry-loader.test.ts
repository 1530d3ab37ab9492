/**
 * Registry loading rules and embeddings paths (docs/registry.md), each with its log line or message.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadRegistry } from '../../gateway/registry/loader';
import { RegistryConfigError } from '../../gateway/registry/errors';
import { resolveConfigPath, BUNDLED_CONFIG_DIR, packageRoot } from '../../gateway/registry/paths';
import { registryBuildContext } from '../../gateway/registry';
import { buildModel } from '../../gateway/registry/model-builder';
import type { Registry } from '../../gateway/registry/types';
import { captureLogs } from '../support/logs';

const dir = mkdtempSync(join(tmpdir(), 'registry-'));
let n = 0;

function file(yaml: string): string {
  n += 1;
  const path = join(dir, `models-${n}.yaml`);
  writeFileSync(path, yaml);
  return path;
}

function load(yaml: string, env: Record<string, string> = {}): { registry: Registry; messages: string[]; lines: Array<Record<string, unknown>> } {
  const { log, lines } = captureLogs('gateway', 'debug');
  const path = file(yaml);
  const registry = loadRegistry({ path: { path, source: 'env' }, log, ...registryBuildContext(env) });
  // pino writes asynchronously through the capture stream only when flushed; sync enough here:
  log.flush();
  return { registry, messages: lines.map((l) => String(l.msg)), lines };
}

const wait = () => new Promise((r) => setTimeout(r, 10));

describe('registry loader', () => {
  it('resolves paths: canonical env > older env > active manifest > bundled default, with the override line', () => {
    const cwd = '/srv/app';
    assert.deepEqual(resolveConfigPath('models', { MODELS_CONFIG_PATH: 'a.yaml', MODELS_CONFIG: 'b.yaml' }, { cwd }), { path: '/srv/app/a.yaml', source: 'env' });
    assert.deepEqual(resolveConfigPath('models', { MODELS_CONFIG: 'b.yaml' }, { cwd }), { path: '/srv/app/b.yaml', source: 'env_legacy' });
    const manifest = { dir: '/etc/dist', paths: { models: 'config/models.yaml', routing: '/abs/routing.yaml' } };
    assert.deepEqual(resolveConfigPath('models', {}, { cwd, manifest }), { path: '/etc/dist/config/models.yaml', source: 'manifest' });
    assert.deepEqual(resolveConfigPath('routing', {}, { cwd, manifest }), { path: '/abs/routing.yaml', source: 'manifest' });
    const overridden = resolveConfigPath('models', { MODELS_CONFIG_PATH: '/x/m.yaml' }, { cwd, manifest });
    assert.equal(overridden.path, '/x/m.yaml');
    assert.match(overridden.overrideMessage ?? '', /Explicit override: MODELS_CONFIG_PATH=\/x\/m.yaml takes precedence over manifest paths.models/);
    assert.deepEqual(resolveConfigPath('models', {}, { cwd }), { path: join(BUNDLED_CONFIG_DIR, 'models.yaml'), source: 'default' });
    assert.deepEqual(resolveConfigPath('alerts', {}, { cwd }), { path: join(BUNDLED_CONFIG_DIR, 'alerts.yaml'), source: 'default' });
  });

  it('finds the bundled config beside package.json, from source and from dist/', () => {
    const root = join(__dirname, '../..');
    assert.equal(BUNDLED_CONFIG_DIR, join(root, 'config'));
    assert.equal(packageRoot(join(root, 'dist', 'gateway', 'registry')), root);
  });

  it('warns and loads no models when the file does not exist', async () => {
    const { log, lines } = captureLogs();
    const registry = loadRegistry({ path: { path: '/nope/models.yaml', source: 'env' }, log, ...registryBuildContext({}) });
    await wait();
    assert.equal(registry.models.length, 0);
    assert.equal(registry.routesConfigured, 0);
    assert.ok(lines.some((l) => l.level === 'warn' && l.msg === 'Models config not found: /nope/models.yaml'));
  });

  it('builds one route from a shorthand model with every default of 2.1, and logs Registered N routes', async () => {
    const { registry, lines } = load(`
models:
  - id: m1
    name: Model One
    provider: engine_a
    base_url: http://127.0.0.1:8000/v1
    aliases: [m1-alias, m1-other]
`);
    await wait();
    const model = registry.models[0]!;
    assert.equal(model.modelType, 'chat');
    assert.equal(model.routes.length, 1);
    const route = model.routes[0]!;
    assert.equal(route.kind, 'engine_a');
    assert.equal(route.providerLabel, 'engine_a');
    assert.equal(route.providerModelId, 'm1');
    assert.equal(route.weight, 1);
    assert.equal(route.quantization, 'bf16');
    assert.equal(route.contextLength, 8192);
    assert.equal(route.maxOutputLength, 4096);
    assert.equal(route.supportsTools, false);
    assert.equal(route.supportsStructuredOutput, false);
    assert.deepEqual(route.supportedParams, ['temperature', 'top_p', 'max_tokens']);
    assert.deepEqual(route.reasoningEfforts, []);
    assert.equal(route.onDemand, false);
    assert.equal(route.processor, 'default');
    assert.deepEqual(route.apiKeys, []);
    assert.equal(registry.routesConfigured, 3, 'one per id plus one per alias');
    assert.equal(registry.byName.get('m1-other'), model);
    assert.ok(lines.some((l) => l.msg === `Registered 3 routes from ${registry.source}`));
  });

  it('expands only whole-value ${NAME} in the named fields', () => {
    const { registry } = load(`
models:
  - id: m
    name: M
    provider: generic_compat
    base_url: \${BASE}
    api_key: \${KEY}
    provider_model_id: \${UPSTREAM_MODEL}
    extra_body: { note: "\${KEY}" }
  - id: literal
    name: L
    provider: generic_compat
    base_url: http://h/\${BASE}
    api_key: prefix-\${KEY}
`, { BASE: 'http://up:1/v1', KEY: 'sk-1', UPSTREAM_MODEL: 'org/model' });
    const [m, literal] = registry.models;
    assert.equal(m!.routes[0]!.baseUrl, 'http://up:1/v1');
    assert.deepEqual(m!.routes[0]!.apiKeys, ['sk-1']);
    assert.equal(m!.routes[0]!.providerModelId, 'org/model');
    assert.deepEqual(m!.routes[0]!.extraBody, { note: '${KEY}' }, 'other fields are never expanded');
    assert.equal(literal!.routes[0]!.baseUrl, 'http://h/${BASE}', 'no embedded substitution');
    assert.deepEqual(literal!.routes[0]!.apiKeys, ['prefix-${KEY}']);
  });

  it('skips the whole model when a required ${VAR} is unset or blank, naming model and variable', async () => {
    const { registry, lines } = load(`
models:
  - id: needs-key
    name: N
    provider: generic_compat
    base_url: http://h/v1
    api_key: \${MISSING_KEY}
  - id: blank-base
    name: B
    provider: generic_compat
    base_url: \${BLANK}
  - id: pool
    name: P
    route:
      - kind: generic_compat
        base_url: http://h/v1
        api_keys: ["\${K1}", "\${K2}"]
  - id: ok
    name: OK
    provider: generic_compat
    base_url: http://h/v1
`, { BLANK: '  ', K1: 'a' });
    await wait();
    assert.deepEqual(registry.models.map((m) => m.id), ['ok']);
    const warnings = lines.filter((l) => l.level === 'warn').map((l) => String(l.msg));
    assert.ok(warnings.includes('Skipping model needs-key: MISSING_KEY (api_key) is unset or blank'));
    assert.ok(warnings.includes('Skipping model blank-base: BLANK (base_url) is unset or blank'));
    assert.ok(warnings.includes('Skipping model pool: K2 (api_keys) is unset or blank'));
  });

  it('skips only an optional route whose ${VAR} is unset, with a warning', async () => {
    const { registry, lines } = load(`
models:
  - id: m
    name: M
    route:
      - kind: engine_a
        base_url: http://local:8000
      - kind: hosted_a
        base_url: https://hosted/v1
        api_key: \${HOSTED_KEY}
        optional: true
`);
    await wait();
    assert.deepEqual(registry.models[0]!.routes.map((r) => r.kind), ['engine_a']);
    assert.ok(lines.some((l) => l.level === 'warn' && l.msg === 'Skipping optional route 1 of model m: HOSTED_KEY (api_key) is unset or blank'));
  });

  it('loads the bundled example registry: three aggregator models, all skipped without the credential', async () => {
    const bundled = resolveConfigPath('models', {}, { cwd: process.cwd() });
    const without = captureLogs();
    const empty = loadRegistry({ path: bundled, log: without.log, ...registryBuildContext({}) });
    await wait();
    assert.equal(empty.models.length, 0);
    assert.ok(without.lines.some((l) => /^No models are available/.test(String(l.msg))));
    const withKey = loadRegistry({ path: bundled, log: captureLogs().log, ...registryBuildContext({ AGGREGATOR_API_KEY: 'agg-key' }) });
    assert.equal(withKey.models.length, 3);
    assert.ok(withKey.models.every((m) => m.routes.every((r) => r.kind === 'aggregator' && r.apiKeys[0] === 'agg-key')));
    assert.deepEqual(withKey.models.map((m) => m.modelType), ['chat', 'chat', 'embedding']);
  });

  it('stops loading at a model with a malformed or reserved route label, keeping earlier models', async () => {
    for (const label of ['Bad Label', 'x'.repeat(65), 'engine_a', 'aggregator']) {
      const { registry, lines } = load(`
models:
  - { id: first, name: F, provider: generic_compat, base_url: http://h/v1 }
  - id: second
    name: S
    route: [{ kind: generic_compat, base_url: http://h/v1, provider: "${label}" }]
  - { id: third, name: T, provider: generic_compat, base_url: http://h/v1 }
`);
      await wait();
      assert.deepEqual(registry.models.map((m) => m.id), ['first'], label);
      assert.ok(lines.some((l) => l.level === 'warn' && /^Failed to load models file/.test(String(l.msg))), label);
    }
  });

  it('keeps a label override and its endpoint_id stable when only the label changes', () => {
    const base = (label: string) => load(`
models:
  - id: m
    name: M
    route:
      - { kind: generic_compat, base_url: "http://h/v1/", ${label} }
      - { kind: generic_compat, base_url: http://other/v1 }
`).registry.models[0]!.routes;
    const unlabelled = base('weight: 1');
    const labelled = base('provider: my-label, provider_display_name: My Label');
    assert.equal(labelled[0]!.providerLabel, 'my-label');
    assert.equal(labelled[0]!.providerDisplayName, 'My Label');
    assert.equal(labelled[0]!.endpointId, unlabelled[0]!.endpointId);
    assert.notEqual(unlabelled[0]!.endpointId, unlabelled[1]!.endpointId);
  });

  it('stops startup on unknown router, unknown router_params key, removed resource keys, and api_key with api_keys', () => {
    const cases: Array<[string, RegExp]> = [
      ['router: fastest', /unknown router 'fastest'; known strategies: fixed, routewise/],
      ['router_params: { nonsense: 1 }', /unknown router_params key 'nonsense'/],
      ['router_params: { quota: 5 }', /router_params.quota is no longer supported; use route-level 'quota: \{limit: N\}' instead/],
      ['router_params: { concurrency_limit: 5 }', /use route-level 'concurrency: \{limit: N\}'/],
      ['api_key: a\n    api_keys: [b]', /set either api_key or api_keys, not both/],
      ['provider: no_such_kind', /Unknown adapter kind: no_such_kind/],
    ];
    for (const [extra, message] of cases) {
      assert.throws(() => load(`
models:
  - id: m
    name: M
    base_url: http://h/v1
    ${extra.startsWith('provider') ? '' : 'provider: generic_compat'}
    ${extra}
`), message, extra);
    }
    assert.throws(() => load(`
models:
  - id: m
    name: M
    route: [{ kind: engine_a, base_url: http://h, api_key: a, api_keys: [b] }]
`), RegistryConfigError);
  });

  it('demo: true marks a scripted stand-in; absent it is left out; a non-boolean stops startup naming the key', () => {
    const { registry } = load(`
models:
  - { id: d, name: D, demo: true, provider: generic_compat, base_url: http://h/v1 }
  - { id: r, name: R, demo: false, provider: generic_compat, base_url: http://h/v1 }
`);
    assert.equal(registry.byName.get('d')?.demo, true);
    assert.equal('demo' in registry.byName.get('r')!, false);
    assert.throws(() => load(`
models:
  - { id: d, name: D, demo: "yes", provider: generic_compat, base_url: http://h/v1 }
`), /model 'd': invalid 'demo'/);
  });

  it('loads router routewise (installed); a known strategy whose package is missing stops startup saying so', () => {
    const yaml = { id: 'm', name: 'M', provider: 'generic_compat', base_url: 'http://h/v1', router: 'routewise', router_params: { objective: 'cost' } };
    const ctx = { ...registryBuildContext({}), file: 'models.yaml', warn: () => undefined };
    const built = buildModel(yaml, 0, ctx);
    assert.ok('model' in built && built.model.router === 'routewise');
    assert.throws(() => buildModel(yaml, 0, { ...ctx, availableStrategies: new Set(['fixed']) }), /router 'routewise' \(cost-aware\) is selected but its package is not installed/);
  });

  it('resolves alias collisions to the model loaded last, with a warning', async () => {
    const { registry, lines } = load(`
models:
  - { id: a, name: A, provider: generic_compat, base_url: http://h/v1, aliases: [shared] }
  - { id: b, name: B, provider: generic_compat, base_url: http://h/v1, aliases: [shared] }
`);
    await wait();
    assert.equal(registry.byName.get('shared')?.id, 'b');
    assert.equal(registry.routesConfigured, 3);
    assert.ok(lines.some((l) => l.level === 'warn' && /collides with a/.test(String(l.msg))));
  });

  it("accepts 'type' as an alias of model_type and admin_only as required_role admin", () => {
    const { registry } = load(`
models:
  - { id: e, name: E, type: embedding, provider: engine_b, base_url: http://h, admin_only: true }
`);
    assert.equal(registry.models[0]!.modelType, 'embedding');
    assert.equal(registry.models[0]!.requiredRole, 'admin');
  });

  it('applies the null_cache_details_means_miss rules', () => {
    const ok = load(`
models:
  - id: m
    name: M
    route: [{ kind: engine_c, base_url: http://h, null_cache_details_means_miss: true }]
`).registry.models[0]!.routes[0]!;
    assert.equal(ok.nullCacheDetailsMeansMiss, true);
    assert.throws(() => load(`
models:
  - { id: m, name: M, provider: engine_c, base_url: http://h, null_cache_details_means_miss: true }
`), /null_cache_details_means_miss is route-level only/);
    assert.throws(() => load(`
models:
  - id: m
    name: M
    route: [{ kind: engine_c, base_url: http://h, null_cache_details_means_miss: "false" }]
`), /must be true or false, not "false"/);
  });

  it('reads upstream_api: chat_completions by default, responses on compat kinds only (docs/adapters.md)', () => {
    const routes = load(`
models:
  - id: m
    name: M
    upstream_api: responses
    route: [{ kind: generic_compat, base_url: http://h }, { kind: engine_a, base_url: http://e, upstream_api: chat_completions }]
  - { id: n, name: N, provider: engine_b, base_url: http://h }
`).registry.models.flatMap((m) => m.routes.map((r) => r.upstreamApi));
    assert.deepEqual(routes, ['responses', 'chat_completions', 'chat_completions']);
    assert.throws(() => load(`
models:
  - { id: m, name: M, provider: vendor_h_direct, base_url: http://h, upstream_api: responses }
`), /upstream_api 'responses' needs a chat-completions-compatible kind .*'vendor_h_direct' is of family message_format/);
    assert.throws(() => load(`
models:
  - { id: m, name: M, provider: generic_compat, base_url: http://h, upstream_api: messages }
`), /invalid 'upstream_api'/);
  });

  describe('embeddings_path (2.5)', () => {
    const model = (path: string, extra = '') => `
models:
  - id: e
    name: E
    model_type: embedding
    route:
      - { kind: generic_compat, base_url: http://h/v1, embeddings_path: ${path} ${extra} }
`;
    it('trims, and treats null and empty string as the default', () => {
      assert.equal(load(model('"  /custom/embed  "')).registry.models[0]!.routes[0]!.embeddingsPath, '/custom/embed');
      assert.equal(load(model('null')).registry.models[0]!.routes[0]!.embeddingsPath, undefined);
      assert.equal(load(model('""')).registry.models[0]!.routes[0]!.embeddingsPath, undefined);
      assert.equal(load(model('"${EP}"'), { EP: 'v2/embed' }).registry.models[0]!.routes[0]!.embeddingsPath, 'v2/embed');
    });
    it('rejects whitespace-only, non-string and .. segments, even on optional routes', () => {
      assert.throws(() => load(model('"   "')), /embeddings_path is blank/);
      assert.throws(() => load(model('42')), /must be a string or null/);
      assert.throws(() => load(model('"/v1/../admin"', ', optional: true')), /may not contain '\.\.' segments/);
    });
    it('aborts startup for an unset variable on a required route, skips an optional route with a warning', async () => {
      assert.throws(() => load(model('"${NO_EP}"')), /embeddings_path variable NO_EP is unset or blank \(required route\)/);
      const { registry, lines } = load(`
models:
  - id: e
    name: E
    model_type: embedding
    route:
      - { kind: generic_compat, base_url: http://h/v1 }
      - { kind: generic_compat, base_url: http://h2/v1, embeddings_path: "\${NO_EP}", optional: true }
`);
      await wait();
      assert.equal(registry.models[0]!.routes.length, 1);
      assert.ok(lines.some((l) => l.msg === 'Skipping optional route 1 of model e: NO_EP (embeddings_path) is unset or blank'));
    });
    it('is rejected on a model, including a shorthand model', () => {
      assert.throws(() => load(`
models:
  - { id: e, name: E, model_type: embedding, provider: generic_compat, base_url: http://h/v1, embeddings_path: /x }
`), /embeddings_path is route-only/);
    });
  });
});
