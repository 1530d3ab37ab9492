/**
 * `GET, PUT /admin/agent/host-settings` over the real API and PostgreSQL (docs/agent-admin.md
 * "Host settings"): operator only; every limit answered with its value, default and where it
 * applies; partial PUT, `null` back to the default; 400 naming the key for unknown keys, wrong
 * types, out-of-bounds values and NUL, saving nothing; the audit row; the two setting routes keep
 * to their own keys; a second API process applies a change within 5 s by its own poll; a former
 * setting (forks, terminals) is refused with the reason, and a value of one still stored (by an
 * older process) is ignored: GET and PUT keep working.
 */
import assert from 'node:assert/strict';
import { admin, ADMIN_TOKEN, assertInvalid } from '../../../support/admin';
import { insertOwner } from '../../../support/agent-rows';
import { startTestApi, type TestApi } from '../../../support/api';
import { freshDatabase, type TestDatabase } from '../../../support/db';
import { eventually } from '../../../support/accounts';

const ENV = { AGENT_TURN_TIME_LIMIT_SECONDS: '1200', AGENT_SANDBOX_MEMORY_BYTES: String(2 * 1024 ** 3), AGENT_SANDBOX_CPUS: '1.5' };
const PATH = '/admin/agent/host-settings';

interface LimitView { value: unknown; default: unknown; saved: boolean; updated_at: string | null; applies_to: string }
type HostSettingsBody = { revision: string | null; settings: Record<string, LimitView>; changed?: string[] };
type AuditRow = { category: string; outcome: string; actor_type: string; actor_user_id: string | null; target_type: string; target_id: string; details: Record<string, unknown> };

describe('admin: host settings (PostgreSQL, two API processes)', function () {
  this.timeout(30_000);
  let t: TestDatabase;
  let api: TestApi;
  let second: TestApi;
  let operatorId: number;
  let operatorToken: string;
  let ownerToken: string;

  before(async () => {
    t = await freshDatabase();
    api = await startTestApi({ db: t.db, env: ENV });
    second = await startTestApi({ db: t.db, env: ENV });
    operatorId = await insertOwner(t.db, 'host-settings-operator@example.test', { permissions: ['agent.admin'] });
    operatorToken = api.deps.tokens.issue({ id: operatorId, role: 'pro' }).access_token;
    const ownerId = await insertOwner(t.db, 'host-settings-owner@example.test', { permissions: ['agent.use'] });
    ownerToken = api.deps.tokens.issue({ id: ownerId, role: 'pro' }).access_token;
  });
  after(async () => {
    await second?.close();
    await api?.close();
    await t?.drop();
  });

  const get = (target: TestApi = api, token: string | null = ADMIN_TOKEN) => admin<HostSettingsBody>(target, 'GET', PATH, undefined, token);
  const put = (settings: unknown, token: string | null = ADMIN_TOKEN) => admin<HostSettingsBody>(api, 'PUT', PATH, { settings }, token);
  const revision = async () => (await t.db('agent_settings_state').first<{ revision: string } | undefined>('revision'))?.revision ?? '0';

  it('is for operators only: 401 anonymous or wrong token, 403 without agent.admin, on both methods', async () => {
    for (const call of [(tk: string | null) => get(api, tk), (tk: string | null) => put({ turn_time_limit_seconds: 600 }, tk)]) {
      assert.equal((await call(null)).status, 401);
      assert.equal((await call('wrong-token')).status, 401);
      assert.equal((await call(ownerToken)).status, 403);
    }
    for (const method of ['GET', 'PUT']) {
      assert.equal(api.routes.find((r) => r.path === PATH && r.methods.includes(method))?.access, 'operator');
    }
    assert.equal(await revision(), '0', 'a refused PUT saved nothing');
    assert.equal((await t.db('agent_settings')).length, 0);
  });

  it('answers every limit with its value, its default (the environment or the built-in one) and where it applies', async () => {
    const { status, body } = await get(api, operatorToken);
    assert.equal(status, 200);
    assert.deepEqual(Object.keys(body.settings).sort(), [
      'command_output_max_kib', 'command_timeout_seconds', 'container_cpus', 'container_disk_gib', 'container_memory_mib', 'container_open_files', 'container_pids',
      'file_read_max_kib', 'idle_timeout_seconds', 'repository_max_mib', 'sessions_per_sandbox', 'turn_time_limit_seconds',
    ]);
    assert.deepEqual(body.settings.sessions_per_sandbox, { value: 4, default: 4, saved: false, updated_at: null, applies_to: 'new_forks' });
    assert.deepEqual(body.settings.turn_time_limit_seconds, { value: 1200, default: 1200, saved: false, updated_at: null, applies_to: 'new_turns' });
    assert.deepEqual(body.settings.container_memory_mib, { value: 2048, default: 2048, saved: false, updated_at: null, applies_to: 'new_sandboxes' });
    assert.equal(body.settings.container_cpus?.value, 1.5);
    assert.equal(body.settings.repository_max_mib?.value, 10_240);
    assert.equal(body.settings.command_timeout_seconds?.value, 600);
    assert.deepEqual(body.settings.container_pids, { value: 1024, default: 1024, saved: false, updated_at: null, applies_to: 'new_sandboxes' });
    assert.equal(body.settings.container_open_files?.value, 16_384);
    assert.deepEqual(body.settings.container_disk_gib, { value: 20, default: 20, saved: false, updated_at: null, applies_to: 'new_sandboxes' });
    assert.deepEqual(body.settings.idle_timeout_seconds, { value: null, default: null, saved: false, updated_at: null, applies_to: 'running_sandboxes' });
    const adminSettings = await admin<{ settings: Record<string, unknown> }>(api, 'GET', '/admin/agent/settings');
    assert.equal(adminSettings.body.settings.turn_time_limit_seconds, undefined, 'the admin settings route does not list host keys');
    assert.notEqual(adminSettings.body.settings.workspace_download_max_mib, undefined);
  });

  it('PUT is partial and audited, null returns a key to its default, and the other process applies it within 5 s', async () => {
    const saved = await put({ turn_time_limit_seconds: 900, container_memory_mib: 8192, container_cpus: 0.5, idle_timeout_seconds: 3600 }, operatorToken);
    assert.equal(saved.status, 200, JSON.stringify(saved.body));
    assert.deepEqual(saved.body.changed?.sort(), ['container_cpus', 'container_memory_mib', 'idle_timeout_seconds', 'turn_time_limit_seconds']);
    assert.equal(saved.body.settings.container_memory_mib?.value, 8192);
    assert.equal(saved.body.settings.container_memory_mib?.default, 2048);
    assert.equal(saved.body.settings.container_memory_mib?.saved, true);
    assert.match(String(saved.body.settings.container_memory_mib?.updated_at), /^\d{4}-\d\d-\d\dT/);
    assert.equal(saved.body.settings.command_timeout_seconds?.saved, false, 'an omitted key keeps its value');
    assert.equal(api.deps.agentSettings.current.container_cpus, 0.5);
    assert.equal(api.deps.settings.AGENT_TURN_TIME_LIMIT_SECONDS, 900, 'the live environment view follows');
    assert.equal(api.deps.settings.AGENT_SANDBOX_MEMORY_BYTES, 8192 * 1024 * 1024);
    await eventually(() => Promise.resolve(second.deps.agentSettings.current.container_memory_mib === 8192), 'the second API applies the change', 5000);
    assert.equal((await get(second)).body.settings.turn_time_limit_seconds?.value, 900);

    const audit = await t.db('agent_audit_log').where({ action: 'agent.host_settings.update' }).orderBy('id', 'desc').first<AuditRow>();
    assert.equal(audit?.category, 'settings');
    assert.equal(audit?.outcome, 'succeeded');
    assert.equal(audit?.actor_type, 'user');
    assert.equal(String(audit?.actor_user_id), String(operatorId));
    assert.deepEqual([audit?.target_type, audit?.target_id], ['settings', 'host']);
    assert.deepEqual(audit?.details.after, { turn_time_limit_seconds: 900, container_memory_mib: 8192, container_cpus: 0.5, idle_timeout_seconds: 3600 });
    assert.deepEqual(audit?.details.before, { turn_time_limit_seconds: 'default', container_memory_mib: 'default', container_cpus: 'default', idle_timeout_seconds: 'default' });

    const same = await put({ container_memory_mib: 8192 });
    assert.deepEqual(same.body.changed, [], 'a value equal to the saved one changes nothing');
    const reset = await put({ container_memory_mib: null, idle_timeout_seconds: null });
    assert.deepEqual(reset.body.changed?.sort(), ['container_memory_mib', 'idle_timeout_seconds']);
    assert.deepEqual(reset.body.settings.container_memory_mib, { value: 2048, default: 2048, saved: false, updated_at: null, applies_to: 'new_sandboxes' });
    assert.equal(reset.body.settings.idle_timeout_seconds?.value, null);
    assert.equal(reset.body.settings.turn_time_limit_seconds?.value, 900, 'keys not named keep their saved value');
    const resetAudit = await t.db('agent_audit_log').where({ action: 'agent.host_settings.update' }).orderBy('id', 'desc').first<AuditRow>();
    assert.deepEqual(resetAudit?.details.before, { container_memory_mib: 8192, idle_timeout_seconds: 3600 });
    assert.deepEqual(resetAudit?.details.after, { container_memory_mib: 'default', idle_timeout_seconds: 'default' });
    await put({ turn_time_limit_seconds: null, container_cpus: null });
    await eventually(() => Promise.resolve(second.deps.settings.AGENT_TURN_TIME_LIMIT_SECONDS === 1200), 'the second API returns to the default', 5000);
  });

  it('refuses unknown keys, wrong types, out-of-bounds values and NUL with a 400 naming the key, and saves nothing of that body', async () => {
    const before = await revision();
    const audits = (await t.db('agent_audit_log')).length;
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ no_such_limit: 1 }, 'settings.no_such_limit'],
      [{ workspace_download_max_mib: 64 }, 'settings.workspace_download_max_mib'],
      [{ turn_time_limit_seconds: '600' }, 'settings.turn_time_limit_seconds'],
      [{ turn_time_limit_seconds: 59 }, 'settings.turn_time_limit_seconds'],
      [{ turn_time_limit_seconds: 86_401 }, 'settings.turn_time_limit_seconds'],
      [{ turn_time_limit_seconds: 600.5 }, 'settings.turn_time_limit_seconds'],
      [{ repository_max_mib: 0 }, 'settings.repository_max_mib'],
      [{ repository_max_mib: 102_401 }, 'settings.repository_max_mib'],
      [{ container_cpus: 0.2 }, 'settings.container_cpus'],
      [{ container_cpus: 65 }, 'settings.container_cpus'],
      [{ container_memory_mib: 255 }, 'settings.container_memory_mib'],
      [{ container_memory_mib: 262_145 }, 'settings.container_memory_mib'],
      [{ container_disk_gib: 10_241 }, 'settings.container_disk_gib'],
      [{ idle_timeout_seconds: 59 }, 'settings.idle_timeout_seconds'],
      [{ command_timeout_seconds: 0 }, 'settings.command_timeout_seconds'],
      [{ command_output_max_kib: true }, 'settings.command_output_max_kib'],
      [{ file_read_max_kib: [256] }, 'settings.file_read_max_kib'],
      [{ container_cpus: 2, command_timeout_seconds: 'a\u0000b' }, 'settings.command_timeout_seconds'],
      [{ 'turn_time_limit_seconds\u0000': 600 }, 'settings.turn_time_limit_seconds'],
    ];
    for (const [settings, field] of cases) assertInvalid(await put(settings), field);
    assertInvalid(await admin(api, 'PUT', PATH, { settings: {}, limits: {} }), 'limits');
    assertInvalid(await admin(api, 'PUT', PATH, { settings: [] }), 'settings');
    assertInvalid(await admin(api, 'PUT', PATH, { 'settings\u0000': {} }), 'settings');
    assert.equal((await admin(api, 'PUT', PATH, '{"settings": ')).status, 400);
    assert.equal((await admin(api, 'PUT', '/admin/agent/settings', { settings: { container_memory_mib: 1024 } })).status, 400, 'host keys are not admin settings');
    assert.equal(await revision(), before);
    assert.equal((await t.db('agent_audit_log')).length, audits, 'no audit row for a refused body');
    assert.equal((await get()).body.settings.container_cpus?.saved, false);
  });

  it('refuses a former setting (terminals) with a 400 naming it and why, and saves nothing of that body', async () => {
    const before = await revision();
    for (const key of ['terminals_per_sandbox', 'terminal_idle_timeout_seconds']) {
      const refused = await put({ container_cpus: 1, [key]: 4 }, operatorToken);
      assertInvalid(refused, `settings.${key}`);
      assert.match(JSON.stringify(refused.body), /no longer a setting \(removed: .*terminals/);
    }
    assert.equal(await revision(), before);
    assert.equal((await get()).body.settings.container_cpus?.saved, false);
  });

  it('ignores a value of a former setting still stored (saved by an older process): GET and PUT keep working, and the sync says why', async () => {
    await t.db('agent_settings').insert({ key: 'terminals_per_sandbox', value: JSON.stringify(16), sealed: null });
    await t.db('agent_settings_state').update({ revision: t.db.raw('revision + 1') });
    const read = await get(second);
    assert.equal(read.status, 200, JSON.stringify(read.body));
    assert.equal(read.body.settings.terminals_per_sandbox, undefined, 'not listed');
    assert.ok(second.logs.lines.some((l) => l.event === 'agent_setting_not_applied' && String(l.msg).includes('terminals_per_sandbox: removed: sandboxes have no terminals')),
      'logged as not applied, with the reason');
    const saved = await put({ container_cpus: 3 }, operatorToken);
    assert.equal(saved.status, 200, JSON.stringify(saved.body));
    assert.deepEqual(saved.body.changed, ['container_cpus']);
    assert.equal(saved.body.settings.terminals_per_sandbox, undefined);
    assert.equal(api.deps.agentSettings.current.container_cpus, 3);
    await put({ container_cpus: null }, operatorToken);
    await t.db('agent_settings').where({ key: 'terminals_per_sandbox' }).delete();
  });
});
