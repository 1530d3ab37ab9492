/**
 * The runtime-configuration overlay (pure): the file registry is never mutated, unchanged routes
 * keep their identity, each layer applies in its documented order, and stored values that cannot
 * be applied are reported and skipped.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { registryBuildContext } from '../../gateway/registry';
import { loadRegistry } from '../../gateway/registry/loader';
import type { Registry } from '../../gateway/registry/types';
import { buildEffectiveConfig } from '../../gateway/runtime-config/overlay';
import { keyFingerprint } from '../../gateway/runtime-config/secrets';
import { emptyStoredState, type StoredState } from '../../gateway/runtime-config/types';
import { captureLogs } from '../support/logs';

const YAML = `models:
  - id: m
    name: M
    required_role: pro
    route:
      - { kind: generic_compat, base_url: "http://a.example/v1", api_key: env-key-1, provider: lab-a }
      - { kind: engine_a, base_url: "http://b.example", weight: 2 }
  - id: other
    name: Other
    provider: generic_compat
    base_url: "http://c.example/v1"
`;

function baseRegistry(): Registry {
  const path = join(mkdtempSync(join(tmpdir(), 'overlay-')), 'models.yaml');
  writeFileSync(path, YAML);
  return loadRegistry({ path: { path, source: 'env' }, log: captureLogs().log, ...registryBuildContext({}) });
}

function state(patch: Partial<StoredState>): StoredState {
  return { ...emptyStoredState(), ...patch };
}

function build(base: Registry, stored: StoredState): { config: ReturnType<typeof buildEffectiveConfig>; problems: string[] } {
  const problems: string[] = [];
  const config = buildEffectiveConfig(base, stored, (message) => problems.push(message));
  return { config, problems };
}

describe('runtime configuration overlay', () => {
  it('with nothing stored returns the file registry itself, every route tagged yaml', () => {
    const base = baseRegistry();
    const { config, problems } = build(base, emptyStoredState());
    assert.equal(config.registry, base);
    assert.deepEqual([...config.routes.values()].map((r) => [r.routeId, r.source, r.effectiveWeight]), [['m#0', 'yaml', 1], ['m#1', 'yaml', 2], ['other#0', 'yaml', 1]]);
    assert.deepEqual(problems, []);
  });

  it('never mutates the file registry; untouched models and routes keep their identity', () => {
    const base = baseRegistry();
    const m = base.byName.get('m')!;
    const endpointB = m.routes[1]!.endpointId;
    const { config } = build(base, state({ weights: [{ model_id: 'm', endpoint_id: endpointB, weight: 0 }] }));
    assert.notEqual(config.registry, base);
    assert.equal(m.routes[1]!.weight, 2, 'the file registry is unchanged');
    const effective = config.registry.byName.get('m')!;
    assert.equal(effective.routes[0], m.routes[0], 'an untouched route is the same object');
    assert.equal(effective.routes[1]!.weight, 0);
    assert.equal(config.registry.byName.get('other'), base.byName.get('other'), 'an untouched model is the same object');
  });

  it('applies retarget, runtime route, keys, visibility and weights in order, keeping endpoint ids', () => {
    const base = baseRegistry();
    const m = base.byName.get('m')!;
    const stored = state({
      routeConfigs: [{ model_id: 'm', route_id: 'm#1', config: { base_url: 'http://moved.example' }, api_key: null, api_key_fingerprint: null }],
      candidates: [{ id: '7', model_id: 'm', provider: 'extra', kind: 'generic_compat', base_url: 'http://d.example/v1', api_key: null, api_key_fingerprint: null, provider_model_id: null, weight: 3, settings: {} }],
      providerKeys: [{ id: '1', provider: 'lab-a', label: null, api_key: 'added-key', key_prefix: 'adde', fingerprint: keyFingerprint('added-key'), min_role: null, disabled_at: null, created_at: new Date() }],
      visibility: [{ model_id: 'm', required_role: 'admin' }],
      weights: [{ model_id: 'm', endpoint_id: 'ep_rt_7', weight: 5 }],
    });
    const { config, problems } = build(base, stored);
    assert.deepEqual(problems, []);
    const effective = config.registry.byName.get('m')!;
    assert.deepEqual(effective.routes.map((r) => [r.routeId, config.routes.get(r.routeId)!.source]), [['m#0', 'yaml'], ['m#1', 'override'], ['m#c7', 'runtime']]);
    assert.equal(effective.routes[1]!.baseUrl, 'http://moved.example');
    assert.equal(effective.routes[1]!.endpointId, m.routes[1]!.endpointId, 'a retargeted route keeps its endpoint_id');
    assert.deepEqual(effective.routes[0]!.apiKeys, ['env-key-1', 'added-key']);
    assert.deepEqual([effective.routes[2]!.endpointId, effective.routes[2]!.weight, config.routes.get('m#c7')!.configuredWeight], ['ep_rt_7', 5, 3]);
    assert.equal(effective.requiredRole, 'admin');
    assert.equal(config.baselineRoles.get('m'), 'pro');
  });

  it('a disabled provider and an emptied key pool give weight 0 with reasons, whatever the override', () => {
    const base = baseRegistry();
    const m = base.byName.get('m')!;
    const { config } = build(base, state({
      disabledEnvKeys: [{ provider: 'lab-a', fingerprint: keyFingerprint('env-key-1') }],
      disabledProviders: [{ provider: 'engine_a', reason: null }],
      weights: [{ model_id: 'm', endpoint_id: m.routes[1]!.endpointId, weight: 4 }],
    }));
    assert.deepEqual([...config.routes.values()].slice(0, 2).map((r) => [r.effectiveWeight, r.reasons]), [
      [0, ['every key of the provider is disabled']],
      [0, ['provider disabled']],
    ]);
  });

  it('builds a runtime model with catalog defaults and its required-role marker', () => {
    const settings = new Map<string, unknown>([
      ['runtime_model:rt', { name: 'RT', context_length: 8192, max_output_length: 4096, input_modalities: ['text'], output_modalities: ['text'], supports_tools: false }],
      ['model_required_role:rt', 'internal'],
    ]);
    const candidates = [{ id: '3', model_id: 'rt', provider: null, kind: 'generic_compat', base_url: 'http://e.example/v1', api_key: 'k', api_key_fingerprint: null, provider_model_id: 'up', weight: 1, settings: {} }];
    const { config } = build(baseRegistry(), state({ settings, candidates }));
    const rt = config.registry.byName.get('rt')!;
    assert.deepEqual([rt.name, rt.requiredRole, rt.contextLength, rt.maxOutputLength, rt.routes[0]!.supportsTools, rt.routes[0]!.providerModelId], ['RT', 'internal', 8192, 4096, false, 'up']);
    assert.ok(config.runtimeModels.has('rt'));
    assert.equal(config.registry.routesConfigured, 3);
  });

  it('reports and skips what cannot be applied: bad retarget, runtime id taken by the file, unknown strategy, orphans', () => {
    const settings = new Map<string, unknown>([
      ['runtime_model:m', { name: 'clash', context_length: 8192, max_output_length: 4096, input_modalities: ['text'], output_modalities: ['text'], supports_tools: false }],
      ['model_router:other', 'nonsense'],
    ]);
    const base = baseRegistry();
    const { config, problems } = build(base, state({
      settings,
      routeConfigs: [{ model_id: 'm', route_id: 'm#0', config: { kind: 'bogus' }, api_key: null, api_key_fingerprint: null }],
      weights: [{ model_id: 'm', endpoint_id: 'ep_gone', weight: 1 }],
      visibility: [{ model_id: 'gone', required_role: 'pro' }],
    }));
    assert.equal(problems.length, 5, problems.join('\n'));
    assert.ok(problems.every((p) => p.startsWith('saved setting not applied as stored: ')));
    assert.equal(config.registry.byName.get('m')!.routes[0]!.kind, 'generic_compat');
    assert.equal(config.registry.byName.get('m')!.name, 'M');
    assert.equal(config.registry.byName.get('other')!.router, undefined);
  });
});
