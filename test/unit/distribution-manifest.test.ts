/**
 * Distribution manifest (docs/site-config.md): validation, activation modes, and its `paths:` in registry
 * path resolution (env beats manifest, which beats the bundled default).
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadGatewayConfiguration } from '../../gateway/registry';
import { loadDistribution, manifestPaths, readManifest } from '../../gateway/registry/manifest';
import { captureLogs } from '../support/logs';

const dir = mkdtempSync(join(tmpdir(), 'manifest-'));
mkdirSync(join(dir, 'config'));
writeFileSync(join(dir, 'config', 'models.yaml'), 'models:\n  - { id: from-manifest, name: M, provider: engine_a, base_url: "http://127.0.0.1:9" }\n');
writeFileSync(join(dir, 'env-models.yaml'), 'models:\n  - { id: from-env, name: E, provider: engine_a, base_url: "http://127.0.0.1:9" }\n');
const MANIFEST = join(dir, 'manifest.yaml');
writeFileSync(MANIFEST, `schema_version: 1
distribution: { id: acme, display_name: Acme AI, release: "2026.11", extra_ok: true }
site: { public_base_url: "https://ai.acme.example", support_email: help@acme.example }
features: { public_signup: false, public_stats: true }
paths: { models: config/models.yaml }
deployment: { target: compose }
`);

function manifestFile(text: string): string {
  const path = join(dir, `m-${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(path, text);
  return path;
}

describe('distribution manifest', () => {
  it('validates schema_version, and rejects unknown keys at the top level and under features', () => {
    assert.equal(readManifest(MANIFEST).distribution?.display_name, 'Acme AI');
    assert.throws(() => readManifest(manifestFile('schema_version: 2\n')), /schema_version/);
    assert.throws(() => readManifest(manifestFile('schema_version: 1\nsurprise: true\n')), /surprise/);
    assert.throws(() => readManifest(manifestFile('schema_version: 1\nfeatures: { teleport: true }\n')), /teleport/);
    assert.doesNotThrow(() => readManifest(manifestFile('schema_version: 1\nsite: { anything: 1 }\n')));
    const literal = readManifest(manifestFile('schema_version: 1\nsite: { public_base_url: "${SITE_URL}" }\npaths: { models: "${HOME}/models.yaml" }\n'));
    assert.equal(literal.site?.public_base_url, '${SITE_URL}', 'no environment interpolation');
    assert.equal(literal.paths?.models, '${HOME}/models.yaml');
  });

  it('treats modes: dark validates only, active applies, anything else is misconfigured with one warning', () => {
    const { log, lines } = captureLogs();
    assert.equal(loadDistribution({ path: MANIFEST, mode: 'dark', cwd: dir, log }).status, 'dark');
    assert.equal(loadDistribution({ path: MANIFEST, mode: 'active', cwd: dir, log }).status, 'active');
    assert.equal(loadDistribution({ path: undefined, mode: 'dark', cwd: dir, log }).status, 'none');
    for (const [path, mode] of [[MANIFEST, 'Active'], [MANIFEST, ''], [undefined, 'active']] as const) {
      assert.equal(loadDistribution({ path, mode, cwd: dir, log }).status, 'misconfigured', `${path} ${mode}`);
    }
    assert.equal(lines.filter((l) => l.event === 'distribution_misconfigured').length, 3);
  });

  it('uses an active manifest\'s paths, lets an env variable override them with a log line, and ignores a dark manifest', async () => {
    const run = (settings: Record<string, string>) => {
      const logs = captureLogs();
      return { ...loadGatewayConfiguration({ settings, env: {}, cwd: dir, log: logs.log }), logs };
    };
    const active = run({ DISTRIBUTION_CONFIG_PATH: MANIFEST, DISTRIBUTION_CONFIG_MODE: 'active' });
    assert.deepEqual(active.registry.models.map((m) => m.id), ['from-manifest']);
    const overridden = run({ DISTRIBUTION_CONFIG_PATH: MANIFEST, DISTRIBUTION_CONFIG_MODE: 'active', MODELS_CONFIG_PATH: 'env-models.yaml' });
    assert.deepEqual(overridden.registry.models.map((m) => m.id), ['from-env']);
    await new Promise((r) => setTimeout(r, 10));
    assert.ok(overridden.logs.lines.some((l) => /^Explicit override: MODELS_CONFIG_PATH=.*env-models.yaml takes precedence over manifest paths.models$/.test(String(l.msg))));
    const dark = run({ DISTRIBUTION_CONFIG_PATH: MANIFEST, DISTRIBUTION_CONFIG_MODE: 'dark' });
    assert.ok(dark.registry.source.endsWith(join('config', 'models.yaml')) && !dark.registry.source.startsWith(dir), 'dark mode keeps the bundled default');
  });

  it('reads an overlay directory\'s config/models.yaml and config/routing.yaml when the active manifest names no paths', () => {
    const overlay = mkdtempSync(join(tmpdir(), 'overlay-'));
    mkdirSync(join(overlay, 'config'));
    writeFileSync(join(overlay, 'config', 'models.yaml'), 'models:\n  - { id: from-overlay, name: O, provider: engine_a, base_url: "http://127.0.0.1:9" }\n');
    writeFileSync(join(overlay, 'config', 'routing.yaml'), 'default_router: fixed\n');
    writeFileSync(join(overlay, 'manifest.yaml'), 'schema_version: 1\ndistribution: { id: overlay }\n');
    const { log } = captureLogs();
    const settings = { DISTRIBUTION_CONFIG_PATH: join(overlay, 'manifest.yaml'), DISTRIBUTION_CONFIG_MODE: 'active' };
    const { registry, distribution } = loadGatewayConfiguration({ settings, env: {}, cwd: dir, log });
    assert.deepEqual(registry.models.map((m) => m.id), ['from-overlay']);
    assert.deepEqual(manifestPaths(distribution)?.paths, { models: 'config/models.yaml', routing: 'config/routing.yaml' });
    const dark = loadGatewayConfiguration({ settings: { ...settings, DISTRIBUTION_CONFIG_MODE: 'dark' }, env: {}, cwd: dir, log });
    assert.notDeepEqual(dark.registry.models.map((m) => m.id), ['from-overlay'], 'a dark manifest\'s overlay is not applied');
  });

  it('serves no models and logs CRITICAL when an active manifest fails to load', async () => {
    const logs = captureLogs();
    const { registry, distribution } = loadGatewayConfiguration({
      settings: { DISTRIBUTION_CONFIG_PATH: manifestFile('schema_version: 1\nbogus: 1\n'), DISTRIBUTION_CONFIG_MODE: 'active' }, env: {}, cwd: dir, log: logs.log,
    });
    assert.equal(distribution.status, 'failed');
    assert.equal(registry.models.length, 0);
    await new Promise((r) => setTimeout(r, 10));
    assert.ok(logs.lines.some((l) => l.level === 'fatal' && /^CRITICAL: active distribution manifest failed to load/.test(String(l.msg))));
  });
});
