/**
 * The batch of sandbox actions without Temporal (docs/sandboxes.md "Batch actions"): deliveries go
 * through an injected function that counts how many are open at once (each held until the test
 * releases it), so "at most four at once" is measured, not timed; results come back in request
 * order with each item's own status, and an item's failure never fails the batch. The real
 * delivery path is test/integration/sandbox-batch.test.ts.
 */
import assert from 'node:assert/strict';
import { BATCH_CONCURRENCY, batchBodySchema, runSandboxBatch, type BatchItem } from '../../../../api/routes/admin-sandbox-batch';
import { SANDBOX_ACTIONS } from '../../../../api/routes/admin-sandboxes';
import { AppError } from '../../../../lib/errors';
import type { SandboxActionAccepted, SandboxActionRequest } from '../../../../workflows/definitions/sandbox-group';
import { captureLogs } from '../../../support/logs';

async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
}

describe('sandbox batch (runSandboxBatch)', () => {
  const caller = { operator: { via: 'access_token' as const, userId: 7 }, remoteAddress: '192.0.2.9' };

  it('delivers at most four at once, uses every slot, and answers in request order whatever finishes first', async () => {
    let open = 0;
    let peak = 0;
    const openSeen: number[] = [];
    const releases: Array<() => void> = [];
    const requests: Array<[string, SandboxActionRequest]> = [];
    const deliver = async (groupId: string, request: SandboxActionRequest): Promise<SandboxActionAccepted> => {
      requests.push([groupId, request]);
      open += 1;
      peak = Math.max(peak, open);
      await new Promise<void>((resolve) => releases.push(resolve));
      open -= 1;
      return { groupId, action: request.action, state: 'stop_pending', hidden: false };
    };
    const items: BatchItem[] = Array.from({ length: 10 }, (_, i) => ({
      group_id: `grp_${i}`, generation: i + 1, container_id: `abcdef01234567${i}0`, last_activity_at: '2026-01-01T00:00:00.000Z',
    }));
    const done = runSandboxBatch({ deliver, log: captureLogs().log }, 'stop', items, caller);
    await settle();
    while (releases.length > 0) {
      openSeen.push(open);
      releases.pop()!(); // the newest first: deliveries finish out of order
      await settle();
    }
    const results = await done;
    assert.equal(BATCH_CONCURRENCY, 4);
    assert.equal(peak, 4, 'never more than four deliveries at once');
    assert.deepEqual(openSeen.slice(0, 7), [4, 4, 4, 4, 4, 4, 4], 'four at once while items remain');
    assert.deepEqual(results.map((r) => r.group_id), items.map((i) => i.group_id), 'results in request order');
    assert.ok(results.every((r) => r.status === 202 && 'state' in r && r.state === 'stop_pending'));
    // Each request is the single route's: the reviewed fields, the operator and the address.
    const first = requests.find(([g]) => g === 'grp_3')![1];
    assert.deepEqual(first, {
      action: 'stop', generation: 4, containerId: 'abcdef0123456730', lastActivityAt: '2026-01-01T00:00:00.000Z', actor: 'user:7', actorIp: '192.0.2.9',
    });
  });

  it("accepts every action of the single routes' table with exactly that route's body fields", () => {
    const schema = batchBodySchema();
    const every: Record<string, unknown> = { container_id: 'abcdef0123456789', generation: 2, last_activity_at: '2026-01-01T00:00:00.000Z' };
    assert.ok(SANDBOX_ACTIONS.some((a) => a.action === 'archive_delete'), 'the table lists the archive action');
    for (const { action, schema: body } of SANDBOX_ACTIONS) {
      const fields = Object.keys(body.shape);
      const item: Record<string, unknown> = { group_id: 'grp_a', ...Object.fromEntries(fields.map((f) => [f, every[f]])) };
      assert.deepEqual(schema.safeParse({ action, items: [item] }).data, { action, items: [item] }, action);
      for (const extra of Object.keys(every).filter((f) => !fields.includes(f))) {
        assert.equal(schema.safeParse({ action, items: [{ ...item, [extra]: every[extra] }] }).success, false, `${action} refuses ${extra}`);
      }
      for (const missing of fields) {
        const { [missing]: _dropped, ...rest } = item;
        assert.equal(schema.safeParse({ action, items: [rest] }).success, false, `${action} needs ${missing}`);
      }
    }
  });

  it("gives each item its single route's status and body: 200/202, 404, 409, 503, and 500 without the fault's text", async () => {
    const outcomes: Record<string, () => SandboxActionAccepted> = {
      grp_hidden: () => ({ groupId: 'grp_hidden', action: 'remove_from_inventory', state: 'stopped', hidden: true }),
      grp_unknown: () => { throw new AppError('not_found', 'Sandbox group not found: grp_unknown'); },
      grp_refused: () => { throw new AppError('conflict', 'The sandbox is at generation 2, not 1'); },
      grp_busy: () => { throw new AppError('service_unavailable', 'The action could not be carried out now: the sandbox workflow did not answer in time'); },
      grp_bug: () => { throw new TypeError('secret internal detail'); },
    };
    const logs = captureLogs();
    const items = Object.keys(outcomes).map((group_id) => ({ group_id, generation: 1 }));
    const results = await runSandboxBatch({ deliver: (g) => Promise.resolve().then(() => outcomes[g]!()), log: logs.log }, 'remove_from_inventory', items, caller);
    assert.deepEqual(results, [
      { group_id: 'grp_hidden', status: 200, action: 'remove_from_inventory', state: 'stopped', hidden: true },
      { group_id: 'grp_unknown', status: 404, error: { type: 'not_found_error', code: 'not_found', message: 'Sandbox group not found: grp_unknown' } },
      { group_id: 'grp_refused', status: 409, error: { type: 'invalid_request_error', code: 'conflict', message: 'The sandbox is at generation 2, not 1' } },
      { group_id: 'grp_busy', status: 503, error: { type: 'server_error', code: 'service_unavailable', message: 'The action could not be carried out now: the sandbox workflow did not answer in time' } },
      { group_id: 'grp_bug', status: 500, error: { type: 'server_error', code: 'internal', message: 'Internal server error' } },
    ]);
    assert.ok(logs.lines.some((l) => l.msg === 'sandbox batch item failed' && l.group_id === 'grp_bug'), 'the fault is logged');
  });
});
