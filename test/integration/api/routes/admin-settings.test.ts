/**
 * `GET, PUT /admin/agent/settings` over the real API and PostgreSQL (docs/agent-admin.md
 * "Settings"): operator only; partial PUT; 400 naming the key; credential fields write-only and
 * encrypted at rest (an empty replacement keeps them); the audit row without secrets; a second API
 * process sees a change within 5 s; a stored value that cannot apply is logged and the last good
 * value kept; the gateway URL cannot move to another origin while the dispatch token is kept.
 */
import assert from 'node:assert/strict';
import { admin, ADMIN_TOKEN, assertInvalid, type AdminResponse } from '../../../support/admin';
import { insertOwner } from '../../../support/agent-rows';
import { startTestApi, type TestApi } from '../../../support/api';
import { freshDatabase, type TestDatabase } from '../../../support/db';
import { eventually } from '../../../support/accounts';

const ENCRYPTION_KEY = 'settings-encryption-key-of-at-least-32-bytes';
const PASSWORD = 'correct-horse-battery-staple-42';
const ENV = { AGENT_SETTINGS_ENCRYPTION_KEY: ENCRYPTION_KEY, AGENT_GATEWAY_URL: 'http://127.0.0.1:18080', AGENT_REPO_ALLOWLIST: 'acme/env-repo' };

interface SettingView { value?: unknown; default?: unknown; saved: boolean; credential?: true; configured?: boolean; updated_at: string | null }
type SettingsBody = { revision: string | null; encryption_configured: boolean; settings: Record<string, SettingView>; changed?: string[] };

describe('admin: agent settings (PostgreSQL, two API processes)', function () {
  this.timeout(30_000);
  let t: TestDatabase;
  let api: TestApi;
  let second: TestApi;
  let operatorToken: string;
  let ownerToken: string;

  before(async () => {
    t = await freshDatabase();
    api = await startTestApi({ db: t.db, env: ENV });
    second = await startTestApi({ db: t.db, env: ENV });
    const operatorId = await insertOwner(t.db, 'settings-operator@example.test', { permissions: ['agent.admin'] });
    operatorToken = api.deps.tokens.issue({ id: operatorId, role: 'pro' }).access_token;
    const ownerId = await insertOwner(t.db, 'settings-owner@example.test', { permissions: ['agent.use'] });
    ownerToken = api.deps.tokens.issue({ id: ownerId, role: 'pro' }).access_token;
  });
  after(async () => {
    await second?.close();
    await api?.close();
    await t?.drop();
  });

  const get = (target: TestApi = api, token: string | null = ADMIN_TOKEN) => admin<SettingsBody>(target, 'GET', '/admin/agent/settings', undefined, token);
  const put = (settings: unknown, token: string | null = ADMIN_TOKEN) => admin<SettingsBody>(api, 'PUT', '/admin/agent/settings', { settings }, token);

  it('is for operators only: 401 anonymous or wrong token, 403 without agent.admin, on both methods', async () => {
    for (const call of [(tk: string | null) => get(api, tk), (tk: string | null) => put({ title_generation_enabled: false }, tk)]) {
      assert.equal((await call(null)).status, 401);
      assert.equal((await call('wrong-token')).status, 401);
      assert.equal((await call(ownerToken)).status, 403);
    }
    assert.equal((await get(api, operatorToken)).status, 200);
    for (const method of ['GET', 'PUT']) {
      assert.equal(api.routes.find((r) => r.path === '/admin/agent/settings' && r.methods.includes(method))?.access, 'operator');
    }
    const unchanged = await get();
    assert.equal(unchanged.body.revision, '0', 'a refused PUT saved nothing');
  });

  it('shows every setting with its default from the environment, credentials only as configured or not', async () => {
    const { status, body } = await get();
    assert.equal(status, 200);
    assert.equal(body.encryption_configured, true);
    assert.deepEqual(body.settings.repo_allowlist, { value: ['acme/env-repo'], default: ['acme/env-repo'], saved: false, updated_at: null });
    assert.deepEqual(body.settings.workspace_download_max_mib?.value, 1024);
    assert.deepEqual(body.settings.gateway_api_url?.value, 'http://127.0.0.1:18080');
    assert.deepEqual(body.settings.database_tool_password, { credential: true, configured: false, saved: false, updated_at: null });
  });

  it('PUT is partial, audited, applied at once here and within 5 s in the other process', async () => {
    const saved = await put({ workspace_download_max_mib: 64, repo_allowlist: ['acme/one', 'https://git.example.test/team/'] });
    assert.equal(saved.status, 200, JSON.stringify(saved.body));
    assert.deepEqual(saved.body.changed?.sort(), ['repo_allowlist', 'workspace_download_max_mib']);
    assert.equal(saved.body.settings.workspace_download_max_mib?.value, 64);
    assert.equal(saved.body.settings.workspace_download_max_mib?.saved, true);
    assert.equal(saved.body.settings.title_generation_enabled?.saved, false, 'an omitted key keeps its value');
    assert.equal(api.deps.settings.WORKSPACE_DOWNLOAD_MAX_MIB, 64, 'the live environment view follows');
    assert.equal(api.deps.settings.AGENT_REPO_ALLOWLIST, 'acme/one,https://git.example.test/team/');
    // The default sync period (AGENT_SETTINGS_SYNC_SECONDS=2) brings it to the other process within the promised 5 s.
    await eventually(() => Promise.resolve(second.deps.settings.WORKSPACE_DOWNLOAD_MAX_MIB === 64), 'the second API applies the change', 5000);
    assert.equal((await get(second)).body.settings.repo_allowlist?.value instanceof Array, true);

    const audit = await t.db('agent_audit_log').where({ action: 'agent.settings.update' }).orderBy('id', 'desc').first<{ category: string; outcome: string; details: Record<string, unknown>; actor_type: string }>();
    assert.equal(audit?.category, 'settings');
    assert.equal(audit?.outcome, 'succeeded');
    assert.equal(audit?.actor_type, 'admin_token');
    assert.deepEqual(audit?.details.after, { workspace_download_max_mib: 64, repo_allowlist: ['acme/one', 'https://git.example.test/team/'] });
    assert.deepEqual(audit?.details.before, { workspace_download_max_mib: 'default', repo_allowlist: 'default' });

    const reset = await put({ workspace_download_max_mib: null });
    assert.equal(reset.body.settings.workspace_download_max_mib?.value, 1024, 'null returns a key to its default');
    assert.equal(reset.body.settings.workspace_download_max_mib?.saved, false);
  });

  it('refuses unknown keys and bad values with a 400 naming the key, and saves nothing of that body', async () => {
    const before = (await get()).body.revision;
    assertInvalid(await put({ no_such_setting: 1 }), 'settings.no_such_setting');
    assertInvalid(await put({ workspace_download_max_mib: 0 }), 'settings.workspace_download_max_mib');
    assertInvalid(await put({ workspace_download_max_mib: '64' }), 'settings.workspace_download_max_mib');
    assertInvalid(await put({ title_generation_enabled: 'yes', workspace_download_max_mib: 5 }), 'settings.title_generation_enabled');
    assertInvalid(await put({ repo_allowlist: ['ok/one', 'bad entry'] }), 'settings.repo_allowlist');
    assertInvalid(await put({ repo_allowlist: ['a\u0000b'] }), 'settings.repo_allowlist');
    assertInvalid(await put({ gateway_api_url: 'ftp://127.0.0.1:18080' }), 'settings.gateway_api_url');
    assertInvalid(await put({ gateway_api_url: 'http://user:pw@127.0.0.1:18080' }), 'settings.gateway_api_url');
    assertInvalid(await put({ database_tool_password: 'short' }), 'settings.database_tool_password');
    assertInvalid(await admin(api, 'PUT', '/admin/agent/settings', { settings: {}, extra: 1 }), 'extra');
    assertInvalid(await admin(api, 'PUT', '/admin/agent/settings', { settings: [] }), 'settings');
    assert.equal((await admin(api, 'PUT', '/admin/agent/settings', '{"settings": ')).status, 400);
    assert.equal((await get()).body.revision, before);
    assert.equal(api.deps.settings.WORKSPACE_DOWNLOAD_MAX_MIB, 1024);
  });

  it('keeps credentials write-only and encrypted; an empty replacement keeps the saved value; no secret in responses, audit or logs', async () => {
    const saved = await put({ database_tool_password: PASSWORD });
    assert.equal(saved.status, 200, JSON.stringify(saved.body));
    assert.deepEqual(saved.body.settings.database_tool_password?.configured, true);
    const row = await t.db('agent_settings').where({ key: 'database_tool_password' }).first<{ value: unknown; sealed: string }>();
    assert.equal(row?.value, null);
    assert.ok(row?.sealed.startsWith('v1.'));
    assert.ok(!row.sealed.includes(PASSWORD) && !Buffer.from(row.sealed).toString('base64').includes(Buffer.from(PASSWORD).toString('base64')));
    assert.equal(api.deps.agentSettings.current.database_tool_password, PASSWORD, 'the process can use it');
    await eventually(() => Promise.resolve(second.deps.agentSettings.current.database_tool_password === PASSWORD), 'the second API decrypts it', 5000);

    const kept = await put({ database_tool_password: '', title_generation_enabled: false });
    assert.deepEqual(kept.body.changed, ['title_generation_enabled']);
    assert.equal(api.deps.agentSettings.current.database_tool_password, PASSWORD);
    assert.equal(api.deps.settings.AGENT_TITLE_GENERATION_ENABLED, false);

    const everything = JSON.stringify([
      saved.body, kept.body, (await get()).body, await t.db('agent_audit_log').select('*'), api.logs.lines, second.logs.lines,
    ]);
    assert.ok(!everything.includes(PASSWORD), 'the password appears nowhere');
    const audits = await t.db('agent_audit_log').where({ action: 'agent.settings.update' }).orderBy('id', 'desc').limit(2).select<Array<{ details: { after: Record<string, unknown> } }>>('details');
    assert.equal(audits[1]?.details.after.database_tool_password, 'replaced');

    const cleared = await put({ database_tool_password: null });
    assert.equal(cleared.body.settings.database_tool_password?.configured, false);
    assert.equal(api.deps.agentSettings.current.database_tool_password, null);
  });

  it('refuses to move the gateway API URL to another origin while the dispatch token is kept; a new path on the same origin applies', async () => {
    const moved = await put({ gateway_api_url: 'http://10.9.9.9:18080' });
    assertInvalid(moved, 'settings.gateway_api_url');
    assert.match((moved.body as unknown as { error: { message: string } }).error.message, /bound to http:\/\/127\.0\.0\.1:18080/);
    const same = await put({ gateway_api_url: 'http://127.0.0.1:18080/gw' });
    assert.equal(same.status, 200);
    assert.equal(api.deps.settings.AGENT_GATEWAY_URL, 'http://127.0.0.1:18080/gw');
    await put({ gateway_api_url: null });
  });

  it('logs a stored value that cannot apply as "saved setting not applied as stored" and keeps the last good value', async () => {
    await put({ workspace_download_max_mib: 77 });
    await eventually(() => Promise.resolve(second.deps.settings.WORKSPACE_DOWNLOAD_MAX_MIB === 77), 'second applies 77', 5000);
    // A value written around the API (an older or newer version, a hand edit) that this version refuses.
    await t.db.transaction(async (trx) => {
      await trx('agent_settings').where({ key: 'workspace_download_max_mib' }).update({ value: JSON.stringify(-5) });
      await trx('agent_settings').insert({ key: 'future_setting', value: JSON.stringify(true) });
      await trx('agent_settings').insert({ key: 'database_tool_password', sealed: 'v1.AAAA.BBBB.CCCC' });
      await trx('agent_settings_state').update({ revision: trx.raw('revision + 1') });
    });
    await eventually(() => Promise.resolve(second.logs.lines.filter((l) => String(l.msg).startsWith('saved setting not applied as stored:')).length >= 3), 'the second API logs each unapplied value', 5000);
    const messages = second.logs.lines.map((l) => String(l.msg)).filter((m) => m.startsWith('saved setting not applied as stored:'));
    assert.ok(messages.some((m) => m.includes('workspace_download_max_mib')));
    assert.ok(messages.some((m) => m.includes('future_setting')));
    assert.ok(messages.some((m) => m.includes('database_tool_password')));
    assert.equal(second.deps.settings.WORKSPACE_DOWNLOAD_MAX_MIB, 77, 'the last good value stays');
    assert.equal(second.deps.agentSettings.current.database_tool_password, null);
    await t.db('agent_settings').whereIn('key', ['future_setting', 'database_tool_password']).delete();
    await put({ workspace_download_max_mib: null });
  });

  it('a process without AGENT_SETTINGS_ENCRYPTION_KEY refuses to save a credential (503) and still saves plain settings', async () => {
    const plain = await startTestApi({ db: t.db, env: { AGENT_GATEWAY_URL: 'http://127.0.0.1:18080' } });
    try {
      const refused: AdminResponse = await admin(plain, 'PUT', '/admin/agent/settings', { settings: { database_tool_password: PASSWORD } });
      assert.equal(refused.status, 503);
      assert.match(JSON.stringify(refused.body), /AGENT_SETTINGS_ENCRYPTION_KEY/);
      assert.equal((await admin(plain, 'PUT', '/admin/agent/settings', { settings: { title_generation_enabled: true } })).status, 200);
      assert.equal((await admin<SettingsBody>(plain, 'GET', '/admin/agent/settings')).body.encryption_configured, false);
    } finally {
      await plain.close();
    }
  });
});
