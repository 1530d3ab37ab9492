import assert from 'node:assert/strict';
import { DEFAULT_SANDBOX_LIMITS } from '../../activities/docker/sandbox-command';
import { defaultValues } from '../../agent/settings/admin-settings';
import { turnLimitsFrom } from '../../agent/settings/host-settings';
import { databaseConfigured, loadSettings, SettingsError } from '../../lib/settings';

describe('settings schema', () => {
  it('applies the documented defaults to an empty environment', () => {
    const s = loadSettings({});
    assert.equal(s.GATEWAY_PORT, 8080);
    assert.equal(s.API_PORT, 8081);
    assert.equal(s.TEMPORAL_ADDRESS, '127.0.0.1:7233');
    assert.equal(s.TEMPORAL_CONTROL_TASK_QUEUE, 'control');
    assert.equal(s.AGENT_HOST_SLOTS, 3);
    assert.equal(s.USER_AUTH_ENABLED, true);
    assert.equal(s.DISTRIBUTION_CONFIG_MODE, 'dark');
    assert.equal(s.AGENT_SANDBOX_IMAGE, 'agent-sandbox:base');
    assert.equal(s.AGENT_SSH_LOGIN_TIMEOUT_SECONDS, 30, 'an SSH connection has 30 s to log in');
    assert.equal(s.AGENT_SSH_MAX_UNAUTHENTICATED, 16);
    assert.equal(s.DATABASE_URL, undefined);
    assert.equal(databaseConfigured(s), false);
    assert.ok(Object.isFrozen(s));
  });

  it('applies the documented defaults for sandboxes, host inventory and prompt rewrite to an empty environment', () => {
    const s = loadSettings({});
    assert.equal(s.AGENT_SANDBOX_MEMORY_BYTES, 4 * 1024 ** 3, 'each sandbox capped at 4g memory');
    assert.equal(s.AGENT_SANDBOX_CPUS, 2, 'each sandbox capped at 2 CPUs');
    assert.deepEqual(DEFAULT_SANDBOX_LIMITS, { memoryBytes: 4 * 1024 ** 3, nanoCpus: 2e9 }, 'the same caps for work carrying no limits');
    assert.equal(s.AGENT_INVENTORY_REFRESH_SECONDS, 30, 'host inventory reported every 30 s');
    assert.equal(s.AGENT_PROMPT_REWRITE_DEADLINE_SECONDS, 90, 'prompt rewrite deadline 90 s');
    assert.equal(defaultValues(s).prompt_rewrite_deadline_seconds, 90, 'the admin setting falls back to the same 90 s');
    const turn = turnLimitsFrom(defaultValues(s));
    assert.deepEqual([turn.memoryBytes, turn.nanoCpus], [4 * 1024 ** 3, 2e9], 'a turn admitted with default host settings gets 4g and 2 CPUs');
  });

  it('parses boolean flags written as false or 0', () => {
    for (const value of ['false', '0', 'FALSE', 'off']) assert.equal(loadSettings({ USER_AUTH_ENABLED: value }).USER_AUTH_ENABLED, false);
    for (const value of ['true', '1', 'yes']) assert.equal(loadSettings({ USER_AUTH_ENABLED: value }).USER_AUTH_ENABLED, true);
  });

  it('treats an empty value as unset', () => {
    assert.equal(loadSettings({ DATABASE_URL: '  ' }).DATABASE_URL, undefined);
  });

  it('turns off the database with DB_ENABLED=false even when DATABASE_URL is set', () => {
    assert.equal(databaseConfigured(loadSettings({ DATABASE_URL: 'postgres://x/y' })), true);
    assert.equal(databaseConfigured(loadSettings({ DATABASE_URL: 'postgres://x/y', DB_ENABLED: 'false' })), false);
  });

  it('names the variable and the fix on invalid values, and enforces cross-field rules', () => {
    assert.throws(() => loadSettings({ GATEWAY_PORT: 'eighty' }), (err: unknown) => {
      assert.ok(err instanceof SettingsError);
      assert.match(err.message, /GATEWAY_PORT/);
      assert.match(err.message, /"eighty"/);
      return true;
    });
    assert.throws(() => loadSettings({ AGENT_HOST_SLOTS: '1' }), /AGENT_HOST_SLOTS/);
    assert.throws(() => loadSettings({ AGENT_HOST_SLOTS: '129' }), /AGENT_HOST_SLOTS/);
    assert.equal(loadSettings({}).AGENT_CHAT_ADMISSION_RETRY_SECONDS, 3, "a waiting chat's own admission tries at most 3 s apart by default");
    assert.throws(() => loadSettings({ AGENT_CHAT_ADMISSION_RETRY_SECONDS: '0' }), /AGENT_CHAT_ADMISSION_RETRY_SECONDS/);
    assert.throws(() => loadSettings({ AGENT_CHAT_ADMISSION_RETRY_SECONDS: '301' }), /AGENT_CHAT_ADMISSION_RETRY_SECONDS/);
    assert.throws(() => loadSettings({ OBJECT_STORE_BACKEND: 's3' }), /S3_ENDPOINT is required when OBJECT_STORE_BACKEND=s3/);
  });

  it('refuses each secret shorter than 32 bytes, naming the variable and never its value', () => {
    for (const name of ['GATEWAY_GRANT_DISPATCH_TOKEN', 'AGENT_ONCALL_DISPATCH_TOKEN', 'AGENT_CONTROL_TOKEN_SECRET', 'AGENT_SOURCE_CONTROL_ENCRYPTION_KEY', 'AGENT_SETTINGS_ENCRYPTION_KEY']) {
      const short = 'x'.repeat(31);
      assert.throws(() => loadSettings({ [name]: short }), (err: unknown) => {
        assert.ok(err instanceof SettingsError);
        assert.match(err.message, new RegExp(`${name}: must be at least 32 bytes`));
        assert.ok(!err.message.includes(short), `${name}'s value is not echoed`);
        return true;
      });
      // 32 bytes counted as UTF-8: 16 two-byte characters are enough.
      assert.equal(loadSettings({ [name]: 'é'.repeat(16) })[name as 'AGENT_CONTROL_TOKEN_SECRET'], 'é'.repeat(16));
    }
  });

  it('never echoes the value of a secret variable in an error', () => {
    assert.throws(() => loadSettings({ AGENT_API_URL: 'not a url', DATABASE_URL: 'postgres://u:hunter2@h/d', OBJECT_STORE_BACKEND: 's3', S3_SECRET_ACCESS_KEY: 'sekrit' }), (err: unknown) => {
      assert.ok(err instanceof SettingsError);
      assert.doesNotMatch(err.message, /hunter2|sekrit/);
      return true;
    });
  });
  it('takes the Gitea administrator whole, with AGENT_GITEA_URL, and never echoes its password', () => {
    assert.throws(() => loadSettings({ AGENT_GITEA_URL: 'https://git.example.com', AGENT_GITEA_ADMIN_PASSWORD: 'hunter2-very-secret' }), (err: unknown) =>
      err instanceof SettingsError && err.message.includes('AGENT_GITEA_ADMIN_USERNAME') && !err.message.includes('hunter2'));
    assert.throws(() => loadSettings({ AGENT_GITEA_ADMIN_USERNAME: 'bot', AGENT_GITEA_ADMIN_PASSWORD: 'pw' }), (err: unknown) =>
      err instanceof SettingsError && err.message.includes('AGENT_GITEA_URL'));
    // Gitea for OAuth linking only (no administrator) is a valid configuration.
    assert.equal(loadSettings({ AGENT_GITEA_URL: 'https://git.example.com' }).AGENT_GITEA_ADMIN_USERNAME, undefined);
    const ok = loadSettings({ AGENT_GITEA_URL: 'https://git.example.com', AGENT_GITEA_ADMIN_USERNAME: 'bot', AGENT_GITEA_ADMIN_PASSWORD: 'pw' });
    assert.equal(ok.AGENT_GITEA_DRAFT_PREFIX, 'WIP:');
    assert.equal(ok.AGENT_GITHUB_API_URL, 'https://api.github.com');
  });

  it('takes GATEWAY_AGENT_API_URL as an http(s) URL, unset when empty (docs/one-origin.md)', () => {
    assert.equal(loadSettings({}).GATEWAY_AGENT_API_URL, undefined);
    assert.equal(loadSettings({ GATEWAY_AGENT_API_URL: '' }).GATEWAY_AGENT_API_URL, undefined);
    assert.equal(loadSettings({ GATEWAY_AGENT_API_URL: 'http://api:8081' }).GATEWAY_AGENT_API_URL, 'http://api:8081');
    for (const bad of ['api:8081', 'ftp://api:8081', 'not a url']) {
      assert.throws(() => loadSettings({ GATEWAY_AGENT_API_URL: bad }), (err: unknown) => err instanceof SettingsError && err.message.includes('GATEWAY_AGENT_API_URL'), bad);
    }
  });
});
