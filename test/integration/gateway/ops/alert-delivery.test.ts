/**
 * Webhook delivery against a real receiver on 127.0.0.1: order kept, `Retry-After` honoured, a
 * permanent refusal drops the card, a full queue drops its oldest card with a logged count, a
 * card whose retry window passes is dropped; the URL never reaches a log line. Backoff maths too.
 */
import assert from 'node:assert/strict';
import type { Card } from '../../../../gateway/ops/alerts/cards';
import { backoffMs, retryAfterMs, WebhookDelivery } from '../../../../gateway/ops/alerts/delivery';
import { captureLogs, type CapturedLogs } from '../../../support/logs';
import { waitFor } from '../../../support/wait';
import { startWebhookReceiver, type WebhookReceiver } from '../../../support/webhook-receiver';

const card = (text: string): Card => ({ text, blocks: [] });

describe('alert webhook delivery', function () {
  this.timeout(30_000);
  let receiver: WebhookReceiver;
  let logs: CapturedLogs;
  let delivery: WebhookDelivery | undefined;
  const start = (config: Partial<{ timeout: number; retryWindow: number; queueLimit: number }> = {}) => {
    delivery = new WebhookDelivery({ url: `${receiver.url}/hooks/secret-token-path`, urlVariable: 'SLACK_WEBHOOK_URL', log: logs.log, random: () => 0, config: { timeout: 1, retryWindow: 60, queueLimit: 100, ...config } });
    return delivery;
  };

  beforeEach(async () => {
    receiver = await startWebhookReceiver();
    logs = captureLogs();
  });
  afterEach(async () => {
    delivery?.stop();
    await receiver.close();
    assert.ok(!JSON.stringify(logs.lines).includes('secret-token-path'), 'the URL never reaches a log line');
  });

  it('backs off exponentially with up to 25 % jitter, capped at a minute, and reads Retry-After', () => {
    assert.deepEqual([1, 2, 3, 7, 12].map((n) => backoffMs(n, () => 0)), [1000, 2000, 4000, 60_000, 60_000]);
    assert.equal(backoffMs(1, () => 0.999), 1249);
    assert.equal(retryAfterMs('3', 0), 3000);
    assert.equal(retryAfterMs(new Date(10_000).toUTCString(), 4000), 6000);
    assert.equal(retryAfterMs('soon', 0), undefined);
  });

  it('keeps the order of cards while the head is retried after a 429 with Retry-After', async () => {
    receiver.setMode({ kind: 'status', status: 429, retryAfter: 2 });
    const d = start();
    d.enqueue(card('first'), 'i1');
    d.enqueue(card('second'), 'i1');
    const retry = await waitFor(() => logs.lines.find((l) => l.event === 'alert_card_retry'), 'a retry');
    assert.equal(retry.why, 'HTTP 429');
    assert.equal(retry.retry_in_ms, 2000, 'Retry-After beats the 1 s backoff');
    receiver.setMode({ kind: 'ok' });
    await waitFor(() => receiver.cards.length === 2, 'both cards');
    assert.deepEqual(receiver.cards.map((c) => c.text), ['first', 'second']);
  });

  it('drops a card the webhook refuses for good (4xx other than 429) and goes on with the next', async () => {
    receiver.setMode({ kind: 'status', status: 404 });
    const d = start();
    d.enqueue(card('refused'), 'i1');
    await waitFor(() => logs.lines.find((l) => l.event === 'alert_card_dropped' && l.reason === 'refused' && l.why === 'HTTP 404'), 'the drop');
    receiver.setMode({ kind: 'ok' });
    d.enqueue(card('next'), 'i2');
    await receiver.waitFor((c) => c.text === 'next');
    assert.equal(d.dropped, 1);
  });

  it('a full queue drops its oldest waiting card (never the one in flight) and logs the count', async () => {
    receiver.setMode({ kind: 'hang' });
    const d = start({ queueLimit: 2, timeout: 2 });
    d.enqueue(card('c1'), 'i1');
    await waitFor(() => receiver.hanging === 1, 'c1 in flight');
    for (const n of [2, 3, 4]) d.enqueue(card(`c${n}`), `i${n}`);
    const dropped = logs.lines.filter((l) => l.event === 'alert_card_dropped' && l.reason === 'queue_full');
    assert.deepEqual(dropped.map((l) => [l.incident, l.dropped_total]), [['i2', 1], ['i3', 2]]);
    assert.equal(d.queued, 2);
    receiver.setMode({ kind: 'ok' });
    await waitFor(() => receiver.cards.length === 2, 'the kept cards');
    assert.deepEqual(receiver.cards.map((c) => c.text), ['c1', 'c4']);
  });

  it('gives a card up once its retry window has passed', async () => {
    receiver.setMode({ kind: 'status', status: 503 });
    start({ retryWindow: 2.5 }).enqueue(card('late'), 'i1');
    const dropped = await waitFor(() => logs.lines.find((l) => l.event === 'alert_card_dropped'), 'the drop');
    assert.equal(dropped.reason, 'retry_window_passed');
    assert.ok(Number(dropped.attempts) >= 2);
  });
});
