/**
 * Alert mutes and snoozes across real processes: two built gateways (`node dist/gateway/main.js`)
 * on one database, one fake upstream and one webhook receiver on 127.0.0.1. A mute set through
 * gateway A silences gateway B's incident of that type (opening and recovery, though it is
 * unmuted before the recovery); a snooze set through A silences B too; once lifted, B posts again.
 * The webhook URL appears in neither process's output.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freeLoopbackPort as freePort } from '../../ops/dev/free-port';
import { admin, ADMIN_TOKEN } from '../support/admin';
import { TEST_JWT_SECRET } from '../support/api';
import { freshDatabase, type TestDatabase } from '../support/db';
import { startFakeUpstream, type FakeUpstream } from '../support/fake-upstream';
import { chatModelYaml } from '../support/gateway';
import { waitFor } from '../support/wait';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver';

const ROOT = join(__dirname, '../..');
const HOOK_PATH = '/services/T9/B9/process-secret-path';

interface GatewayProcess { child: ChildProcess; url: string; lines(): Array<Record<string, unknown>>; output(): string }

async function startGateway(env: Record<string, string>): Promise<GatewayProcess> {
  const port = await freePort();
  const child = spawn(process.execPath, [join(ROOT, 'dist/gateway/main.js')], {
    cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'],
    env: { PATH: process.env.PATH, GATEWAY_HOST: '127.0.0.1', GATEWAY_PORT: String(port), ADMIN_TOKEN, AUTH_JWT_SECRET: TEST_JWT_SECRET, LOG_LEVEL: 'info', ...env },
  });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => { output += c; });
  child.stderr.setEncoding('utf8').on('data', (c: string) => { output += c; });
  await waitFor(() => output.includes('gateway listening') || child.exitCode !== null, 'gateway ready', 30_000);
  if (child.exitCode !== null) throw new Error(`the gateway exited:\n${output}`);
  const lines = () => output.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);
  return { child, url: `http://127.0.0.1:${port}`, lines, output: () => output };
}

async function stop(gw: GatewayProcess | undefined): Promise<void> {
  if (!gw || gw.child.exitCode !== null) return;
  const exited = new Promise((resolve) => gw.child.once('exit', resolve));
  gw.child.kill('SIGTERM');
  await exited;
}

describe('alert mutes and snoozes between two built gateway processes', function () {
  this.timeout(90_000);
  let t: TestDatabase;
  let upstream: FakeUpstream;
  let receiver: WebhookReceiver;
  let a: GatewayProcess | undefined;
  let b: GatewayProcess | undefined;

  const chat = async (gw: GatewayProcess): Promise<number> => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }) });
    await res.arrayBuffer();
    return res.status;
  };
  const alertsOf = async (gw: GatewayProcess) => (await admin<{ snooze: { active: boolean }; mutes: Array<{ type: string; muted: boolean }> }>(gw, 'GET', '/admin/alerts')).body;
  const circuitMuted = async (gw: GatewayProcess) => (await alertsOf(gw)).mutes.find((m) => m.type === 'circuit_open')!.muted;

  /** Opens and closes gateway B's circuit; returns its incident's opening and recovery log lines. */
  const flap = async (between?: () => Promise<void>) => {
    const seen = b!.lines().length;
    upstream.setDefault({ kind: 'status', status: 500 });
    assert.notEqual(await chat(b!), 200);
    upstream.setDefault(undefined);
    const opened = await waitFor(() => b!.lines().slice(seen).find((l) => l.event === 'alert_incident_opened'), 'the incident to open');
    await between?.();
    await waitFor(async () => (await chat(b!)) === 200, 'the circuit to close');
    const recovered = await waitFor(() => b!.lines().find((l) => l.event === 'alert_incident_recovered' && l.incident === opened.incident), 'the recovery');
    return { opened, recovered };
  };

  before(async () => {
    t = await freshDatabase();
    upstream = await startFakeUpstream();
    receiver = await startWebhookReceiver();
    const dir = mkdtempSync(join(tmpdir(), 'alerts-processes-'));
    writeFileSync(join(dir, 'models.yaml'), `models:\n${chatModelYaml('m', [`{ kind: generic_compat, base_url: "${upstream.url}", provider: route-m }`])}`);
    writeFileSync(join(dir, 'alerts.yaml'), 'rules:\n  circuit_open: { cooldown: "${CIRCUIT_ALERT_COOLDOWN:-0}" }\n');
    const env = {
      DATABASE_URL: t.url, MODELS_CONFIG_PATH: join(dir, 'models.yaml'), USER_AUTH_ENABLED: 'false', CIRCUIT_FAILURE_THRESHOLD: '1', CIRCUIT_COOLDOWN_SECONDS: '0.5',
      ALERTS_ENABLED: 'true', ALERTS_CONFIG_PATH: join(dir, 'alerts.yaml'), SLACK_WEBHOOK_URL: `${receiver.url}${HOOK_PATH}`,
    };
    a = await startGateway({ ...env, REQUEST_LOG_SPOOL_DIR: join(dir, 'spool-a') });
    b = await startGateway({ ...env, REQUEST_LOG_SPOOL_DIR: join(dir, 'spool-b') });
  });
  after(async () => {
    await stop(a);
    await stop(b);
    await upstream?.close();
    await receiver?.close();
    await t?.drop();
  });

  it('a mute through A silences B, recovery included; a snooze through A silences B; lifted, B posts again', async () => {
    assert.equal((await admin(a!, 'PUT', '/admin/alerts/mutes/circuit_open', { duration: '1w' })).status, 200);
    await waitFor(() => circuitMuted(b!), 'B to see the mute', 10_000);
    const muted = await flap(async () => {
      assert.equal((await admin(a!, 'DELETE', '/admin/alerts/mutes/circuit_open')).status, 200);
      await waitFor(async () => !(await circuitMuted(b!)), 'B to see the unmute', 10_000);
    });
    assert.deepEqual([muted.opened.suppressed, muted.recovered.suppressed], ['muted', 'muted']);

    assert.equal((await admin(a!, 'PUT', '/admin/alerts/snooze', { duration_seconds: 600 })).status, 200);
    await waitFor(async () => (await alertsOf(b!)).snooze.active, 'B to see the snooze', 10_000);
    const snoozed = await flap();
    assert.deepEqual([snoozed.opened.suppressed, snoozed.recovered.suppressed], ['snoozed', 'snoozed']);
    assert.ok(!receiver.cards.some((c) => c.raw.includes(String(muted.opened.incident)) || c.raw.includes(String(snoozed.opened.incident))), 'no card of a silenced incident');

    assert.equal((await admin(a!, 'DELETE', '/admin/alerts/snooze')).status, 200);
    await waitFor(async () => !(await alertsOf(b!)).snooze.active, 'B to see the snooze end', 10_000);
    const loud = await flap();
    const recovery = await receiver.waitFor((c) => c.raw.includes(String(loud.opened.incident)) && c.text.startsWith(':white_check_mark:'));
    assert.equal(recovery.path, HOOK_PATH);
    assert.ok(receiver.cards.findIndex((c) => c.raw.includes(String(loud.opened.incident))) < receiver.cards.indexOf(recovery), 'opening card first');
    for (const gw of [a!, b!]) assert.ok(!gw.output().includes('process-secret-path'), 'the webhook URL is in no output');
  });
});
