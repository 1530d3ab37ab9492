/**
 * Snooze and mutes set through one gateway's admin API reach a second gateway on the same
 * database within the settings sync (5 s) and are honoured there: a muted type posts nothing,
 * not even the recovery of an incident opened while muted; a snoozed engine posts nothing; bad
 * input is 400 and changes nothing.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { admin, ADMIN_TOKEN, assertInvalid } from '../../../support/admin';
import { freshDatabase, type TestDatabase } from '../../../support/db';
import { closeAll, startFakeUpstream, type FakeUpstream } from '../../../support/fake-upstream';
import { chatModelYaml, startTestGateway, type TestGateway } from '../../../support/gateway';
import { waitFor } from '../../../support/wait';
import { startWebhookReceiver, type WebhookReceiver } from '../../../support/webhook-receiver';

interface View {
  snooze: { active: boolean; until: string | null };
  mutes: Array<{ type: string; muted: boolean; duration: string | null; until: string | null; set_at: string | null }>;
}

describe('alert snooze and mutes across gateways', function () {
  this.timeout(60_000);
  let t: TestDatabase;
  let upstream: FakeUpstream;
  let receiver: WebhookReceiver;
  let a: TestGateway;
  let b: TestGateway;

  const chat = async (gw: TestGateway): Promise<number> => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }) });
    await res.arrayBuffer();
    return res.status;
  };
  const muteOf = (view: View, type: string) => view.mutes.find((m) => m.type === type)!;
  const logged = (gw: TestGateway, event: string, fields: Record<string, unknown>) =>
    gw.logs.lines.find((l) => l.event === event && Object.entries(fields).every(([k, v]) => l[k] === v));

  before(async () => {
    t = await freshDatabase();
    upstream = await startFakeUpstream();
    receiver = await startWebhookReceiver();
    const dir = mkdtempSync(join(tmpdir(), 'alerts-'));
    writeFileSync(join(dir, 'alerts.yaml'), 'rules:\n  circuit_open: { cooldown: 0 }\ndelivery: { timeout: 1 }\n');
    const start = () => startTestGateway({
      db: t.db,
      modelsYaml: `models:\n${chatModelYaml('m', [`{ kind: generic_compat, base_url: "${upstream.url}", provider: route-m }`])}`,
      env: {
        ADMIN_TOKEN, CIRCUIT_FAILURE_THRESHOLD: '1', CIRCUIT_COOLDOWN_SECONDS: '0.5',
        ALERTS_ENABLED: 'true', ALERTS_CONFIG_PATH: join(dir, 'alerts.yaml'), SLACK_WEBHOOK_URL: `${receiver.url}/hook`,
      },
    });
    a = await start();
    b = await start();
  });
  after(async () => {
    await closeAll(a, b, upstream, receiver);
    await t?.drop();
  });

  /** Opens the circuit of `m` on `gw` (one failure), then closes it again; returns the incident's log lines. */
  const flap = async (gw: TestGateway, between?: () => Promise<void>) => {
    const seen = gw.logs.lines.length;
    upstream.setDefault({ kind: 'status', status: 500 });
    assert.notEqual(await chat(gw), 200);
    upstream.setDefault(undefined);
    const opened = await waitFor(() => gw.logs.lines.slice(seen).find((l) => l.event === 'alert_incident_opened' && l.type === 'circuit_open'), 'the incident to open');
    await between?.();
    await waitFor(async () => (await chat(gw)) === 200, 'the circuit to close');
    const recovered = await waitFor(() => logged(gw, 'alert_incident_recovered', { incident: opened.incident }), 'the incident to recover');
    return { opened, recovered };
  };

  it('refuses bad input with 400 naming the problem, and needs an administrator', async () => {
    assertInvalid(await admin(a, 'PUT', '/admin/alerts/snooze', { duration_seconds: 7 * 24 * 3600 + 1 }), 'duration_seconds');
    assertInvalid(await admin(a, 'PUT', '/admin/alerts/snooze', { until: new Date(Date.now() + 8 * 24 * 3600_000).toISOString() }), 'until');
    assert.equal((await admin(a, 'PUT', '/admin/alerts/snooze', {})).status, 400);
    assertInvalid(await admin(a, 'PUT', '/admin/alerts/mutes/circuit_opened', { duration: '1h' }), 'type');
    assertInvalid(await admin(a, 'PUT', '/admin/alerts/mutes/circuit_open', { duration: '2h' }), 'duration');
    assertInvalid(await admin(a, 'PUT', '/admin/alerts/mutes/circuit_open', { duration: '1h', extra: 1 }), 'extra');
    assert.equal((await admin(a, 'GET', '/admin/alerts', undefined, null)).status, 401);
    assert.equal((await admin(a, 'PUT', '/admin/alerts/mutes/circuit_open', { duration: '1h' }, 'wrong')).status, 401);
    const view = await admin<View>(a, 'GET', '/admin/alerts');
    assert.equal(view.body.snooze.active, false);
    assert.ok(view.body.mutes.every((m) => !m.muted), 'nothing was stored');
  });

  it('a mute set on one gateway silences that type on another within seconds, recovery included; unmuting restores it', async () => {
    const muted = await admin<View>(a, 'PUT', '/admin/alerts/mutes/circuit_open', { duration: 'until_unmuted' });
    assert.equal(muted.status, 200);
    assert.deepEqual(muteOf(muted.body, 'circuit_open'), { type: 'circuit_open', muted: true, duration: 'until_unmuted', until: null, set_at: muteOf(muted.body, 'circuit_open').set_at });
    await waitFor(async () => muteOf((await admin<View>(b, 'GET', '/admin/alerts')).body, 'circuit_open').muted, 'gateway B to see the mute', 10_000);

    // Opened while muted; unmuted before it recovers: the recovery stays silent too.
    const { opened, recovered } = await flap(b, async () => {
      assert.equal((await admin(a, 'DELETE', '/admin/alerts/mutes/circuit_open')).status, 200);
      await waitFor(async () => !muteOf((await admin<View>(b, 'GET', '/admin/alerts')).body, 'circuit_open').muted, 'gateway B to see the unmute', 10_000);
    });
    assert.equal(opened.suppressed, 'muted');
    assert.equal(recovered.suppressed, 'muted');
    assert.ok(!receiver.cards.some((c) => c.raw.includes(String(opened.incident))), 'no card of the muted incident');

    const loud = await flap(b);
    assert.equal(loud.opened.suppressed, false);
    await receiver.waitFor((c) => c.text.startsWith(':white_check_mark: Recovered') && c.raw.includes(String(loud.opened.incident)));
  });

  it('a snooze set on one gateway silences every alert on another; ending it restores them', async () => {
    const snoozed = await admin<View>(a, 'PUT', '/admin/alerts/snooze', { duration_seconds: 3600 });
    assert.equal(snoozed.status, 200);
    assert.equal(snoozed.body.snooze.active, true);
    assert.ok(Math.abs(Date.parse(snoozed.body.snooze.until!) - (Date.now() + 3600_000)) < 60_000);
    await waitFor(async () => (await admin<View>(b, 'GET', '/admin/alerts')).body.snooze.active, 'gateway B to see the snooze', 10_000);
    const { opened, recovered } = await flap(b);
    assert.equal(opened.suppressed, 'snoozed');
    assert.equal(recovered.suppressed, 'snoozed');
    assert.ok(!receiver.cards.some((c) => c.raw.includes(String(opened.incident))));

    assert.equal((await admin<View>(a, 'DELETE', '/admin/alerts/snooze')).body.snooze.active, false);
    await waitFor(async () => !(await admin<View>(b, 'GET', '/admin/alerts')).body.snooze.active, 'gateway B to see the snooze end', 10_000);
    const loud = await flap(b);
    await receiver.waitFor((c) => c.raw.includes(String(loud.opened.incident)) && !c.text.startsWith(':white_check_mark:'));
  });
});
