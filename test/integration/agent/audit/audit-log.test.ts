/**
 * The audit log's writer against real PostgreSQL (docs/agent-audit.md): what it stores, the
 * shared text rule and the bounds, commit-together with the action's transaction, the schema's
 * own checks, and audit-before-disclose failing closed with 503.
 */
import assert from 'node:assert/strict';
import {
  auditBeforeDisclose, MAX_DETAILS_BYTES, MAX_REASON_CHARS, recordAudit, USER_DELETION_SWEEPER, type AuditEntry,
} from '../../../../agent/audit/audit-log';
import { isAppError } from '../../../../lib/errors';
import { REPLACEMENT } from '../../../../lib/text';
import { freshDatabase, type TestDatabase } from '../../../support/db';
import type { AuditRow } from '../../../../agent/audit/audit-query';


describe('agent audit log: the writer (PostgreSQL)', () => {
  let t: TestDatabase;
  before(async () => {
    t = await freshDatabase();
  });
  after(async () => {
    await t?.drop();
  });

  const rowOf = async (id: string): Promise<AuditRow> => (await t.db('agent_audit_log').where({ id }).first<AuditRow>());
  const entry = (overrides: Partial<AuditEntry> = {}): AuditEntry => ({
    category: 'hosts', action: 'agent.host.slots_changed', actor: { type: 'user', userId: 7 }, actorIp: '198.51.100.7',
    target: { type: 'host', id: 'host-a' }, outcome: 'succeeded', details: { slots_previous: null, slots_saved: 4 }, ...overrides,
  });

  it('stores an administrator action with source admin, the actor by user id, target, outcome and details', async () => {
    const { id, createdAt } = await recordAudit(t.db, entry({ reason: 'rebalancing' }));
    assert.match(id, /^[1-9][0-9]*$/);
    const row = await rowOf(id);
    assert.equal(row.created_at.toISOString(), createdAt);
    assert.deepEqual(
      [row.category, row.action, row.source, row.actor_type, Number(row.actor_user_id), row.actor_name, row.actor_ip, row.target_type, row.target_id, row.reason, row.outcome],
      ['hosts', 'agent.host.slots_changed', 'admin', 'user', 7, null, '198.51.100.7', 'host', 'host-a', 'rebalancing', 'succeeded'],
    );
    assert.deepEqual(row.details, { slots_previous: null, slots_saved: 4 });
  });

  it('stores the admin token as an actor without a user, and the sweeper as a system actor with source system', async () => {
    const token = await rowOf((await recordAudit(t.db, entry({ actor: { type: 'admin_token' } }))).id);
    assert.deepEqual([token.source, token.actor_type, token.actor_user_id, token.actor_name], ['admin', 'admin_token', null, null]);
    const sweep = await rowOf((await recordAudit(t.db, entry({
      category: 'deletion', action: 'agent.sandbox.delete', actor: USER_DELETION_SWEEPER, actorIp: null, target: { type: 'sandbox', id: 'grp_1' },
    }))).id);
    assert.deepEqual([sweep.source, sweep.actor_type, sweep.actor_user_id, sweep.actor_name, sweep.actor_ip], ['system', 'system', null, 'user-deletion-sweeper', null]);
  });

  it('cleans text by the shared rule (NUL, lone surrogates) in reason, target, address and details, keys included', async () => {
    const { id } = await recordAudit(t.db, entry({
      reason: 'bad\u0000reason\uD800',
      target: { type: 'host', id: 'h\u0000st' },
      actorIp: '::1\u0000',
      details: { 'k\u0000ey': 'v\uDC00al', nested: { list: ['a\u0000'] } },
    }));
    const row = await rowOf(id);
    assert.equal(row.reason, `bad${REPLACEMENT}reason${REPLACEMENT}`);
    assert.equal(row.target_id, `h${REPLACEMENT}st`);
    assert.equal(row.actor_ip, `::1${REPLACEMENT}`);
    assert.deepEqual(row.details, { [`k${REPLACEMENT}ey`]: `v${REPLACEMENT}al`, nested: { list: [`a${REPLACEMENT}`] } });
  });

  it('bounds the reason, the strings, the depth and the total size of details', async () => {
    let deep: Record<string, unknown> = { leaf: 'x' };
    for (let i = 0; i < 20; i++) deep = { deeper: deep };
    const big: Record<string, unknown> = { first: 'kept', deep };
    for (let i = 0; i < 40; i++) big[`field_${i}`] = 'y'.repeat(1500);
    const { id } = await recordAudit(t.db, entry({ reason: 'r'.repeat(5000), details: big }));
    const row = await rowOf(id);
    assert.equal(row.reason!.length, MAX_REASON_CHARS);
    assert.ok(row.reason!.endsWith('…'));
    assert.ok(Buffer.byteLength(JSON.stringify(row.details)) <= MAX_DETAILS_BYTES, 'details within the bound');
    assert.equal(row.details._truncated, true);
    assert.ok(Number(row.details._bytes) > MAX_DETAILS_BYTES, 'the size before cutting is named');
    assert.equal(row.details.first, 'kept', 'leading entries are kept');
    assert.ok(JSON.stringify(row.details.deep).includes('[nested too deep]'), 'depth is cut');
    assert.ok(!('field_39' in row.details), 'entries past the bound are dropped');
    const long = await rowOf((await recordAudit(t.db, entry({ details: { s: 'z'.repeat(10_000) } }))).id);
    assert.ok((long.details.s as string).length <= 2000, 'one long string is cut, not the whole');
  });

  it('commits with the action: a rolled-back transaction leaves no audit row', async () => {
    const before = Number((await t.db('agent_audit_log').count<Array<{ count: string }>>({ count: '*' }))[0]!.count);
    await assert.rejects(t.db.transaction(async (trx) => {
      await recordAudit(trx, entry({ target: { type: 'host', id: 'rolled-back' } }));
      throw new Error('the action failed after its audit row');
    }), /the action failed/);
    assert.equal(await t.db('agent_audit_log').where({ target_id: 'rolled-back' }).first(), undefined);
    await t.db.transaction(async (trx) => {
      await recordAudit(trx, entry({ target: { type: 'host', id: 'committed' } }));
    });
    assert.equal((await t.db('agent_audit_log').where({ target_id: 'committed' })).length, 1);
    assert.equal(Number((await t.db('agent_audit_log').count<Array<{ count: string }>>({ count: '*' }))[0]!.count), before + 1);
  });

  it('refuses entries that break its rules before touching the database', async () => {
    for (const bad of [
      entry({ action: 'host.slots_changed' as AuditEntry['action'] }),
      entry({ action: 'agent.Host.Slots' }),
      entry({ actor: { type: 'system', name: 'Not A Name' } }),
      entry({ target: { type: 'Host Type', id: 'x' } }),
      entry({ category: 'everything' as AuditEntry['category'] }),
    ]) {
      await assert.rejects(recordAudit(t.db, bad), (err: unknown) => isAppError(err) && err.code === 'internal', JSON.stringify(bad));
    }
  });

  it('has the schema refuse rows that bypass the writer (source/actor mismatch, unknown category, oversized details)', async () => {
    const base = { category: 'hosts', action: 'agent.host.removed', source: 'admin', actor_type: 'admin_token', outcome: 'succeeded' };
    await t.db('agent_audit_log').insert(base); // the baseline is valid
    await assert.rejects(t.db('agent_audit_log').insert({ ...base, source: 'system' }), /agent_audit_log_actor/);
    await assert.rejects(t.db('agent_audit_log').insert({ ...base, actor_type: 'user' }), /agent_audit_log_actor/);
    await assert.rejects(t.db('agent_audit_log').insert({ ...base, category: 'everything' }), /agent_audit_log_category/);
    await assert.rejects(t.db('agent_audit_log').insert({ ...base, target_type: 'host' }), /agent_audit_log_target/);
    await assert.rejects(t.db('agent_audit_log').insert({ ...base, details: JSON.stringify({ s: 'x'.repeat(20_000) }) }), /agent_audit_log_details/);
  });

  it('audit before disclose: a failed write becomes 503 service_unavailable and a written one returns its id', async () => {
    await t.db.raw(`
      create function refuse_audit() returns trigger language plpgsql as $$ begin raise exception 'audit store refuses'; end $$;
      create trigger refuse_audit before insert on agent_audit_log for each row when (new.action = 'agent.run.event_content.read') execute function refuse_audit();
    `);
    try {
      const read = entry({ category: 'content', action: 'agent.run.event_content.read', target: { type: 'event', id: '42' } });
      let disclosed = false;
      await assert.rejects((async () => {
        await auditBeforeDisclose(t.db, read);
        disclosed = true;
      })(), (err: unknown) => isAppError(err) && err.status === 503 && err.expose && /nothing was disclosed/.test(err.message));
      assert.equal(disclosed, false, 'the caller never reaches its disclosure');
      assert.equal(await t.db('agent_audit_log').where({ action: 'agent.run.event_content.read' }).first(), undefined);
    } finally {
      await t.db.raw('drop trigger refuse_audit on agent_audit_log; drop function refuse_audit()');
    }
    const ok = await auditBeforeDisclose(t.db, entry({ category: 'content', action: 'agent.run.event_content.read', target: { type: 'event', id: '42' } }));
    assert.equal((await rowOf(ok.id)).action, 'agent.run.event_content.read');
  });
});
