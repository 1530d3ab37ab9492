/**
 * Host settings (agent/settings/host-settings.ts; docs/agent-admin.md "Host settings"): defaults
 * come from the environment variables a limit replaces (or the built-in value), the admin route's
 * parser refuses host keys and the host route's refuses admin keys, and the turn limits a turn is
 * admitted with are the saved values in the units the workflow and the host use. Former settings
 * (forks, terminals) are no keys: a patch naming one is refused with why, a stored one is not applied.
 */
import assert from 'node:assert/strict';
import { decodeStored, defaultValues, parseSettingsPatch } from '../../../../agent/settings/admin-settings';
import { HOST_SETTING_DEFINITIONS, RETIRED_HOST_SETTINGS, turnLimitsFrom } from '../../../../agent/settings/host-settings';
import { loadSettings } from '../../../../lib/settings';

const MIB = 1024 * 1024;

describe('host settings', () => {
  it('defaults to the environment variables they replace, else the built-in values', () => {
    const values = defaultValues(loadSettings({ AGENT_TURN_TIME_LIMIT_SECONDS: '900', AGENT_SANDBOX_MEMORY_BYTES: String(3 * 1024 * MIB), AGENT_SANDBOX_CPUS: '1.5' }));
    assert.equal(values.turn_time_limit_seconds, 900);
    assert.equal(values.container_memory_mib, 3072);
    assert.equal(values.container_cpus, 1.5);
    assert.equal(values.repository_max_mib, 10_240);
    assert.equal(values.command_timeout_seconds, 600);
    assert.equal(values.container_disk_gib, 20, 'every sandbox gets a disk of its own (sparse)');
    assert.equal(values.idle_timeout_seconds, null);
    const spec = defaultValues(loadSettings({}));
    assert.deepEqual([spec.turn_time_limit_seconds, spec.container_memory_mib, spec.container_cpus], [1800, 4096, 2], '4g and 2 CPUs per sandbox');
  });

  it('each route parses only its own keys', () => {
    assert.deepEqual(parseSettingsPatch({ settings: { container_cpus: 4, idle_timeout_seconds: null } }, HOST_SETTING_DEFINITIONS), { container_cpus: 4, idle_timeout_seconds: null });
    assert.throws(() => parseSettingsPatch({ settings: { workspace_download_max_mib: 64 } }, HOST_SETTING_DEFINITIONS), /settings\.workspace_download_max_mib/);
    assert.throws(() => parseSettingsPatch({ settings: { container_cpus: 4 } }), /settings\.container_cpus/);
    assert.throws(() => parseSettingsPatch({ settings: { constructor: 4 } }, HOST_SETTING_DEFINITIONS), /settings\.constructor': unknown setting/);
  });

  it('has no former setting among its keys: a patch naming one is refused with the reason, a stored value of one is not applied', () => {
    assert.deepEqual(Object.keys(RETIRED_HOST_SETTINGS).sort(), ['terminal_idle_timeout_seconds', 'terminals_per_sandbox']);
    for (const key of Object.keys(RETIRED_HOST_SETTINGS)) {
      assert.equal(Object.hasOwn(HOST_SETTING_DEFINITIONS, key), false, `${key} is no setting`);
      assert.equal(key in defaultValues(loadSettings({})), false);
      assert.throws(() => parseSettingsPatch({ settings: { [key]: 8 } }, HOST_SETTING_DEFINITIONS, RETIRED_HOST_SETTINGS),
        new RegExp(`settings\\.${key}': no longer a setting \\(removed: `));
      const stored = decodeStored({ key, value: 8, sealed: null, updated_at: new Date() }, undefined);
      assert.ok('problem' in stored && stored.problem.startsWith(`${key}: removed: `), JSON.stringify(stored));
    }
  });

  it('turns the saved values into the limits of one turn, in bytes, nanoCPUs and seconds', () => {
    const limits = turnLimitsFrom({
      turn_time_limit_seconds: 120, container_memory_mib: 512, container_cpus: 0.25, container_pids: 100, container_open_files: 512,
      container_disk_gib: 3, repository_max_mib: 3, command_timeout_seconds: 7, command_output_max_kib: 2, file_read_max_kib: 5,
    });
    assert.deepEqual(limits, {
      turnTimeLimitSeconds: 120, memoryBytes: 512 * MIB, nanoCpus: 250_000_000, pids: 100, openFiles: 512, diskBytes: 3 * 1024 * MIB, repositoryMaxBytes: 3 * MIB,
      commandTimeoutSeconds: 7, commandOutputMaxBytes: 2048, fileReadMaxBytes: 5120,
    });
  });
});
