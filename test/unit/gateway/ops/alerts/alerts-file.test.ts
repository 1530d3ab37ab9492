/**
 * The alerts file: path precedence (ALERTS_CONFIG_PATH > active manifest paths.alerts > the
 * unshipped default = built-in thresholds), `${VAR}` / `${VAR:-default}` / embedded expansion at
 * any depth, and validation that names the bad key and falls back to the built-in thresholds.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadAlertsConfig, parseAlertsDocument } from '../../../../../gateway/ops/alerts/alerts-file';
import { BUILT_IN_DELIVERY, BUILT_IN_RULES } from '../../../../../gateway/ops/alerts/types';
import type { DistributionState } from '../../../../../gateway/registry/manifest';
import { captureLogs } from '../../../../support/logs';

const dark = { status: 'dark' } as unknown as DistributionState;
const active = (dir: string, alerts?: string) => ({ status: 'active', dir, manifest: { schema_version: 1, paths: alerts ? { alerts } : {} } }) as unknown as DistributionState;

describe('alerts file', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'alerts-file-'));
  });

  it('without any file: the built-in thresholds, silently (the default path is not shipped)', () => {
    const logs = captureLogs();
    const config = loadAlertsConfig({ pathEnv: {}, env: {}, cwd: dir, log: logs.log, distribution: dark });
    assert.equal(config.status, 'built_in');
    assert.equal(config.source, 'default');
    assert.match(config.path, /config\/alerts\.yaml$/);
    assert.deepEqual(config.rules, BUILT_IN_RULES);
    assert.equal(config.rules.auth_failure_spike.enabled, false, 'spike alerts are off by default');
    assert.equal(config.rules.auth_ip_blocked.enabled, true, 'block alerts are on by default');
    assert.ok(!logs.lines.some((l) => l.level === 'warn' || l.level === 'error'));
  });

  it('ALERTS_CONFIG_PATH (relative to the working directory) beats the manifest, and says so', () => {
    writeFileSync(join(dir, 'env.yaml'), 'rules:\n  circuit_open: { cooldown: 7 }\n');
    mkdirSync(join(dir, 'dist'));
    writeFileSync(join(dir, 'dist', 'alerts.yaml'), 'rules:\n  circuit_open: { cooldown: 99 }\n');
    const logs = captureLogs();
    const config = loadAlertsConfig({ pathEnv: { ALERTS_CONFIG_PATH: 'env.yaml' }, env: {}, cwd: dir, log: logs.log, distribution: active(join(dir, 'dist'), 'alerts.yaml') });
    assert.equal(config.source, 'env');
    assert.equal(config.path, join(dir, 'env.yaml'));
    assert.equal(config.rules.circuit_open.cooldown, 7);
    assert.ok(logs.lines.some((l) => String(l.msg).startsWith('Explicit override: ALERTS_CONFIG_PATH=')));
  });

  it('the active manifest path resolves against the manifest directory; a dark manifest is ignored', () => {
    mkdirSync(join(dir, 'dist'));
    writeFileSync(join(dir, 'dist', 'alerts.yaml'), 'rules:\n  auth_failure_spike: { enabled: true, threshold: 5 }\n');
    const fromManifest = loadAlertsConfig({ pathEnv: {}, env: {}, cwd: '/', log: captureLogs().log, distribution: active(join(dir, 'dist'), 'alerts.yaml') });
    assert.equal(fromManifest.source, 'manifest');
    assert.equal(fromManifest.status, 'loaded');
    assert.deepEqual(fromManifest.rules.auth_failure_spike, { ...BUILT_IN_RULES.auth_failure_spike, enabled: true, threshold: 5 });
    const darkManifest = loadAlertsConfig({ pathEnv: {}, env: {}, cwd: '/', log: captureLogs().log, distribution: { ...active(join(dir, 'dist'), 'alerts.yaml'), status: 'dark' } as DistributionState });
    assert.equal(darkManifest.source, 'default');
  });

  it('an explicit path that does not exist: a warning naming it, built-in thresholds', () => {
    const logs = captureLogs();
    const config = loadAlertsConfig({ pathEnv: { ALERTS_CONFIG_PATH: join(dir, 'missing.yaml') }, env: {}, cwd: dir, log: logs.log, distribution: dark });
    assert.equal(config.status, 'not_found');
    assert.deepEqual(config.rules, BUILT_IN_RULES);
    assert.ok(logs.lines.some((l) => l.msg === `Alerts config not found: ${join(dir, 'missing.yaml')}; built-in alert thresholds apply`));
  });

  it('expands ${VAR}, ${VAR:-default} and embedded variables at any depth, numbers and booleans included', () => {
    const file = join(dir, 'alerts.yaml');
    writeFileSync(file, [
      'rules:',
      '  auth_failure_spike:',
      '    enabled: ${SPIKE_ON}',
      '    threshold: ${SPIKE_N:-25}',
      '    window: "${WIN}0"',
      '  circuit_open: { enabled: "${CIRCUIT_ON:-false}" }',
      'delivery: { timeout: "${T:-2}", retry_window: 120 }',
    ].join('\n'));
    const config = loadAlertsConfig({ pathEnv: { ALERTS_CONFIG_PATH: file }, env: { SPIKE_ON: 'true', WIN: '6', T: '' }, cwd: dir, log: captureLogs().log, distribution: dark });
    assert.equal(config.status, 'loaded');
    assert.deepEqual(config.rules.auth_failure_spike, { enabled: true, threshold: 25, window: 60, cooldown: BUILT_IN_RULES.auth_failure_spike.cooldown });
    assert.equal(config.rules.circuit_open.enabled, false);
    assert.deepEqual(config.delivery, { timeout: 2, retryWindow: 120, queueLimit: BUILT_IN_DELIVERY.queueLimit });
  });

  it('rejects unknown keys naming them, at every level', () => {
    assert.throws(() => parseAlertsDocument({ rulez: {} }), /unknown key 'rulez'/);
    assert.throws(() => parseAlertsDocument({ rules: { circuit_opened: {} } }), /unknown key 'rules\.circuit_opened'/);
    assert.throws(() => parseAlertsDocument({ rules: { circuit_open: { treshold: 2 } } }), /unknown key 'rules\.circuit_open\.treshold'/);
    assert.throws(() => parseAlertsDocument({ rules: { auth_ip_blocked: { threshold: 0 } } }), /'rules\.auth_ip_blocked\.threshold'/);
    assert.throws(() => parseAlertsDocument({ rules: { auth_ip_blocked: { enabled: 'yes please' } } }), /'rules\.auth_ip_blocked\.enabled'/);
    assert.throws(() => parseAlertsDocument({ delivery: { timeout: 'soon' } }), /'delivery\.timeout'/);
  });

  it('a malformed file is logged at ERROR naming the file and key; the built-in thresholds apply', () => {
    const file = join(dir, 'alerts.yaml');
    writeFileSync(file, 'rules:\n  auth_ip_blocked: { enabled: false, colldown: 5 }\n');
    const logs = captureLogs();
    const config = loadAlertsConfig({ pathEnv: { ALERTS_CONFIG_PATH: file }, env: {}, cwd: dir, log: logs.log, distribution: dark });
    assert.equal(config.status, 'invalid');
    assert.deepEqual(config.rules, BUILT_IN_RULES, 'nothing of the bad file applies');
    assert.match(config.problem!, /alerts\.yaml: unknown key 'rules\.auth_ip_blocked\.colldown'/);
    assert.ok(logs.lines.some((l) => l.event === 'alerts_config_invalid' && l.level === 'error'));

    writeFileSync(file, 'rules: [unclosed\n');
    assert.equal(loadAlertsConfig({ pathEnv: { ALERTS_CONFIG_PATH: file }, env: {}, cwd: dir, log: logs.log, distribution: dark }).status, 'invalid');
  });
});
