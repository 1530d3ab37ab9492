/**
 * Chat-webhook alerts through a real gateway (database, fake upstreams and a webhook receiver on
 * 127.0.0.1): a spike card naming sources, addresses, key prefixes and paths; a block card; a
 * circuit card then its recovery card with the incident picture; a receiver that hangs or answers
 * 500 delays no request, and the card arrives once it recovers.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createKey, signUpAndLogIn } from '../../../support/accounts';
import { admin, ADMIN_TOKEN } from '../../../support/admin';
import { freshDatabase, type TestDatabase } from '../../../support/db';
import { closeAll, startUpstreamPair, type FakeUpstream } from '../../../support/fake-upstream';
import { chatModelYaml, startTestGateway, type TestGateway } from '../../../support/gateway';
import { waitFor } from '../../../support/wait';
import { startWebhookReceiver, type WebhookReceiver } from '../../../support/webhook-receiver';

const WEBHOOK_PATH = '/services/T0001/B0001/very-secret-path';

describe('chat-webhook alerts', function () {
  this.timeout(60_000);
  let t: TestDatabase;
  let flaky: FakeUpstream;
  let steady: FakeUpstream;
  let receiver: WebhookReceiver;
  let gw: TestGateway;
  let key: string;

  const post = (path: string, from: string, authorization?: string, body: unknown = { model: 'steady', messages: [{ role: 'user', content: 'hi' }] }) => fetch(`${gw.url}${path}`, {
    method: 'POST',
    headers: { 'x-forwarded-for': from, 'content-type': 'application/json', ...(authorization ? { authorization } : {}) },
    body: JSON.stringify(body),
  });
  const chat = async (model: string): Promise<number> => {
    const res = await post('/v1/chat/completions', '3.3.3.3', `Bearer ${key}`, { model, messages: [{ role: 'user', content: 'hi' }] });
    await res.arrayBuffer();
    return res.status;
  };

  before(async () => {
    t = await freshDatabase();
    [flaky, steady] = await startUpstreamPair();
    receiver = await startWebhookReceiver();
    const dir = mkdtempSync(join(tmpdir(), 'alerts-'));
    writeFileSync(join(dir, 'alerts.yaml'), [
      'rules:',
      '  auth_failure_spike: { enabled: "${SPIKE_ON:-true}", threshold: 6, window: 4, cooldown: 1 }',
      '  auth_ip_blocked: { cooldown: 1 }',
      '  circuit_open: { cooldown: 1 }',
      'delivery: { timeout: 1, retry_window: 60 }',
    ].join('\n'));
    gw = await startTestGateway({
      db: t.db,
      modelsYaml: `models:\n${chatModelYaml('flaky', [`{ kind: generic_compat, base_url: "${flaky.url}", provider: route-flaky }`])}${chatModelYaml('steady', [`{ kind: generic_compat, base_url: "${steady.url}", provider: route-steady }`])}`,
      env: {
        // USER_AUTH_ENABLED=false would admit every caller: keys must be checked for failures to exist.
        USER_AUTH_ENABLED: 'true', SIGNUP_REQUIRE_EMAIL_VERIFICATION: 'false', ADMIN_TOKEN, TRUST_PROXY_HEADERS: '1', TRUSTED_PROXIES: '127.0.0.1/32',
        AUTH_FAILURE_BLOCK_THRESHOLD: '3', CIRCUIT_FAILURE_THRESHOLD: '2', CIRCUIT_COOLDOWN_SECONDS: '1',
        ALERTS_ENABLED: 'true', ALERTS_CONFIG_PATH: join(dir, 'alerts.yaml'), SLACK_WEBHOOK_URL: 'http://127.0.0.1:1/unused', SLACK_ALERTS_WEBHOOK_URL: `${receiver.url}${WEBHOOK_PATH}`,
      },
    });
    key = await createKey(gw.url, await signUpAndLogIn(gw.url, t.db, 'alerts@example.com'));
  });
  after(async () => {
    await closeAll(gw, flaky, steady, receiver);
    await t?.drop();
  });

  it('a spike of failures from several sources posts one card naming sources, addresses, key prefixes, reasons and paths', async () => {
    const tries: Array<[string, string, string | undefined]> = [
      ['/v1/chat/completions', '8.8.8.1', 'Bearer gk_aaaaaaaaaaaaaaaaaaaa'],
      ['/v1/chat/completions', '8.8.8.2', 'Bearer gk_bbbbbbbbbbbbbbbbbbbb'],
      ['/v1/chat/completions', '2a00:1450:4001:810::1', 'Bearer gk_cccccccccccccccccccc'],
      ['/v1/chat/completions', '2a00:1450:4001:810::2', 'Bearer gk_cccccccccccccccccccc'],
      ['/auth/login', '8.8.8.1', undefined],
      ['/v1/chat/completions', '8.8.8.2', 'Bearer gk_bbbbbbbbbbbbbbbbbbbb'],
    ];
    for (const [path, from, authorization] of tries) {
      const res = await post(path, from, authorization, path === '/auth/login' ? { email: 'nobody@example.com', password: 'wrong password' } : undefined);
      assert.equal(res.status, 401, `${path} from ${from}`);
    }
    const card = await receiver.waitFor((c) => c.text.includes('Authentication failure spike') && !c.text.includes('Recovered'));
    assert.equal(card.path, WEBHOOK_PATH, 'posted to SLACK_ALERTS_WEBHOOK_URL, which beats SLACK_WEBHOOK_URL');
    assert.match(card.text, /6 failed authentications within 4 s \(threshold 6\) from 3 sources/);
    for (const named of ['8.8.8.1', '8.8.8.2', '2a00:1450:4001:810::/64', 'gk_aaaaaa', 'gk_bbbbbb', 'gk_cccccc', '/v1/chat/completions', '/auth/login', 'login_']) {
      assert.ok(card.raw.includes(named), `the card names ${named}`);
    }
    assert.match(card.raw, /Distinct addresses\*\\n4/, 'four distinct addresses behind three sources');
    assert.ok(!card.raw.includes('gk_aaaaaaaaaaaaaaaaaaaa'), 'never a whole key');
    const recovered = await receiver.waitFor((c) => c.text.startsWith(':white_check_mark: Recovered: Authentication failure spike'));
    assert.match(recovered.text, /Recovered after \d+ s: 6 failed authentications in total/);
    assert.ok(!gw.logs.lines.some((l) => JSON.stringify(l).includes('very-secret-path')), 'the webhook URL never reaches a log line');
  });

  it('a blocklisted source posts an ip_blocked card naming it and what it presented', async () => {
    // The model listing answers anyone, but a presented key that fails still counts.
    for (let i = 0; i < 3; i += 1) await (await fetch(`${gw.url}/v1/models`, { headers: { 'x-forwarded-for': '7.7.7.7', authorization: `Bearer sk-guess-${i}-xxxxxxxx` } })).arrayBuffer();
    assert.equal((await post('/v1/chat/completions', '7.7.7.7', `Bearer ${key}`)).status, 429);
    const card = await receiver.waitFor((c) => c.text.includes('Source blocked') && c.raw.includes('7.7.7.7'));
    assert.match(card.text, /`7\.7\.7\.7` refused after repeated authentication failures/);
    assert.ok(card.raw.includes('/v1/models') && card.raw.includes('sk-gue'), 'paths and key prefixes of the blocked source');
  });

  it('a failing upstream posts circuit_open, then a recovery card once the circuit closed', async () => {
    flaky.setDefault({ kind: 'status', status: 500 });
    for (let i = 0; i < 2; i += 1) assert.notEqual(await chat('flaky'), 200);
    const opened = await receiver.waitFor((c) => c.text.includes('Circuit breaker opened') && !c.text.includes('Recovered'));
    assert.match(opened.text, /flaky via route-flaky \(ep_[^)]+\) stopped receiving requests/);
    assert.ok(opened.raw.includes('consecutive_failures'));
    flaky.setDefault(undefined);
    await waitFor(async () => (await chat('flaky')) === 200, 'the half-open probe to succeed');
    const recovered = await receiver.waitFor((c) => c.text.startsWith(':white_check_mark: Recovered: Circuit breaker opened'));
    assert.match(recovered.text, /Recovered after \d+ s: 1 circuit openings in total/);
    assert.ok(receiver.cards.indexOf(opened) < receiver.cards.indexOf(recovered), 'in order');
  });

  it('a hanging, then failing webhook delays no request, and the card arrives once it recovers', async () => {
    receiver.setMode({ kind: 'hang' });
    const before = receiver.cards.length;
    flaky.setDefault({ kind: 'status', status: 500 });
    for (let i = 0; i < 2; i += 1) assert.notEqual(await chat('flaky'), 200);
    await waitFor(() => receiver.hanging > 0, 'the webhook to hold a card');
    // While the webhook holds the card, requests and auth failures complete.
    assert.equal(await chat('steady'), 200);
    assert.equal((await post('/v1/chat/completions', '6.6.6.6', 'Bearer gk_zzzzzzzzzzzzzzzz')).status, 401);
    assert.ok(receiver.hanging > 0, 'the webhook was still hanging when those requests completed');
    await waitFor(() => gw.logs.lines.some((l) => l.event === 'alert_card_retry' && l.why === 'timeout'), 'the timed-out post to be retried');
    receiver.setMode({ kind: 'status', status: 500 });
    const attempts = receiver.attempts;
    await waitFor(() => receiver.attempts > attempts && gw.logs.lines.some((l) => l.event === 'alert_card_retry' && l.why === 'HTTP 500'), 'a post answered 500');
    assert.equal(await chat('steady'), 200);
    receiver.setMode({ kind: 'ok' });
    const card = await receiver.waitFor((c) => receiver.cards.indexOf(c) >= before && c.text.includes('Circuit breaker opened'), 30_000);
    assert.ok(card.text.includes('flaky'));
    flaky.setDefault(undefined);
    assert.ok(!gw.logs.lines.some((l) => JSON.stringify(l).includes('very-secret-path')), 'the webhook URL never reaches a log line');
  });

  it('GET /admin/alerts shows the rules, where they came from, and the delivery counters', async () => {
    const view = await admin<{ enabled: boolean; webhook: string; config: { status: string; source: string }; rules: Record<string, { enabled: boolean; threshold: number }>; delivery: { delivered: number } }>(gw, 'GET', '/admin/alerts');
    assert.equal(view.status, 200);
    assert.equal(view.body.enabled, true);
    assert.equal(view.body.webhook, 'SLACK_ALERTS_WEBHOOK_URL', 'the variable, never the URL');
    assert.deepEqual([view.body.config.status, view.body.config.source], ['loaded', 'env']);
    assert.deepEqual(view.body.rules.auth_failure_spike, { enabled: true, threshold: 6, window_seconds: 4, cooldown_seconds: 1 });
    assert.ok(view.body.delivery.delivered >= 4);
    assert.ok(!JSON.stringify(view.body).includes('very-secret-path'));
  });
});
