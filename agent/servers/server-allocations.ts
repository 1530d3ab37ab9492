/**
 * Server allocations (`/admin/agent/servers`; docs/agent-hosts.md "Server allocations"):
 * an allocation records that an execution server is allocated to the agent platform as one
 * enrolled host. Its `state` goes `active` → `releasing` (the host drains) → `released` (the host
 * removed), and its `revision` (1 at creation) grows by one on every change, so an operator's
 * release names the revision it saw (agent/servers/allocation-release.ts).
 *
 * This module creates ({@link createAllocation}: the host row locked `FOR UPDATE`, at most one
 * allocation per host not released, audited `agent.server.create` in the same transaction) and
 * reads allocations ({@link getAllocation}, {@link listAllocations}) with what holds their host
 * now (agent/hosts/host-removal.ts `allocationsOf`).
 */
import type { Knex } from 'knex';
import { z } from 'zod';
import type { Db } from '../../lib/db';
import { AppError, isAppError } from '../../lib/errors';
import { recordAudit, type AuditActor, type AuditBy } from '../audit/audit-log';
import { allocationsOf } from '../hosts/host-removal';
import { HOST_ID } from '../hosts/host-registry';
import { allocationTarget } from './host-allocations';

export type AllocationState = 'active' | 'releasing' | 'released';
export const ALLOCATION_STATES = ['active', 'releasing', 'released'] as const satisfies readonly AllocationState[];

/** Longest label, in characters. */
export const MAX_LABEL_CHARS = 200;

/** An allocation id: the row's bigserial as a decimal string (1 .. 2^63-1). */
const ALLOCATION_ID = /^[1-9][0-9]{0,18}$/;
const MAX_BIGINT = 9223372036854775807n;

/** Whether `raw` is an allocation id (a positive decimal bigint without leading zeros). */
export function isAllocationId(raw: string): boolean {
  return ALLOCATION_ID.test(raw) && BigInt(raw) <= MAX_BIGINT;
}

/** The path parameter `allocation_id`, or 400 naming it. */
export function allocationIdOf(raw: string | undefined): string {
  if (raw === undefined || !isAllocationId(raw)) {
    throw new AppError('invalid_request', `Invalid path parameter 'allocation_id': must be a server allocation id (a positive decimal integer)`, { param: 'allocation_id' });
  }
  return raw;
}

/** `POST /admin/agent/servers` body: the host to allocate and an optional label. */
export const createAllocationSchema = z.object({
  host_id: z.string().regex(HOST_ID, 'must be an enrolled host id (1-63 of a-z, 0-9, ".", "_", "-", starting with a letter or digit)'),
  label: z.string().min(1, 'must not be empty').max(MAX_LABEL_CHARS, `must be at most ${MAX_LABEL_CHARS} characters`).nullable().optional(),
}).strict();

/** Who acted, as the audit log shows it: administrators by user id only. */
export type ActorView = { type: 'user'; user_id: number } | { type: 'admin_token' } | { type: 'system'; name: string };

/** One allocation as operators see it. */
export interface AllocationView {
  allocation_id: string;
  host_id: string;
  label: string | null;
  state: AllocationState;
  revision: number;
  /** What holds the host now (running turns, retained sandboxes, placed chats); empty once released. */
  held: string[];
  /** When the host's removal was requested (it drains); null when none is pending or the host is gone. */
  host_removal_requested_at: string | null;
  created_at: string;
  updated_at: string;
  release_requested_at: string | null;
  released_at: string | null;
  created_by: ActorView | null;
  /** Who asked for the release (or removed the host); null while active. */
  released_by: ActorView | null;
}

export interface AllocationRow {
  id: string;
  host_id: string;
  label: string | null;
  state: AllocationState;
  revision: number;
  created_at: Date;
  updated_at: Date;
  release_requested_at: Date | null;
  released_at: Date | null;
  created_by: AuditBy | null;
  released_by: AuditBy | null;
  host_removal_requested_at: Date | null;
}

function actorView(by: AuditBy | null): ActorView | null {
  const actor: AuditActor | undefined = by?.actor;
  if (!actor) return null;
  if (actor.type === 'user') return { type: 'user', user_id: actor.userId };
  if (actor.type === 'system') return { type: 'system', name: actor.name };
  return { type: 'admin_token' };
}

function viewOf(row: AllocationRow, held: string[]): AllocationView {
  return {
    allocation_id: String(row.id),
    host_id: row.host_id,
    label: row.label,
    state: row.state,
    revision: row.revision,
    held,
    host_removal_requested_at: row.state === 'released' ? null : row.host_removal_requested_at?.toISOString() ?? null,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
    release_requested_at: row.release_requested_at?.toISOString() ?? null,
    released_at: row.released_at?.toISOString() ?? null,
    created_by: actorView(row.created_by),
    released_by: actorView(row.released_by),
  };
}

/** Allocation rows with their host's pending removal (the host row stays, as a tombstone at worst). */
function allocationRows(trx: Knex | Knex.Transaction): Knex.QueryBuilder {
  return trx('agent_server_allocations as a')
    .join('agent_hosts as h', 'h.host_id', 'a.host_id')
    .select('a.*', trx.raw('case when h.removed_at is null then h.removal_requested_at end as host_removal_requested_at'));
}

/** Views of `rows`, with what holds each allocation's host now (not looked up for released ones). */
async function viewsOf(trx: Knex.Transaction, rows: AllocationRow[]): Promise<AllocationView[]> {
  const views: AllocationView[] = [];
  for (const row of rows) views.push(viewOf(row, row.state === 'released' ? [] : await allocationsOf(trx, row.host_id)));
  return views;
}

/** One allocation; 404 when there is none with this id. */
export async function getAllocation(db: Db, allocationId: string): Promise<AllocationView> {
  return db.transaction(async (trx) => {
    const row = await allocationRows(trx).where('a.id', allocationId).first<AllocationRow | undefined>();
    if (!row) throw new AppError('not_found', `Server allocation not found: ${allocationId}`);
    return (await viewsOf(trx, [row]))[0]!;
  });
}

/** Default and largest page sizes of the list. */
export const ALLOCATION_PAGE_DEFAULT = 50;
export const ALLOCATION_PAGE_MAX = 200;

const limitMessage = `must be an integer from 1 to ${ALLOCATION_PAGE_MAX}`;

/**
 * The list's query: `state` (`active`, `releasing`, `released`, or `all`; absent: the allocations
 * that hold a host, active and releasing), `before` (an allocation id: only older ones), `limit`.
 */
export const listAllocationsQuerySchema = z.object({
  state: z.enum([...ALLOCATION_STATES, 'all']).optional(),
  before: z.string().refine(isAllocationId, 'must be a server allocation id (a positive decimal integer)').optional(),
  limit: z.string().regex(/^[0-9]{1,4}$/, limitMessage).transform(Number)
    .pipe(z.number().int().min(1, limitMessage).max(ALLOCATION_PAGE_MAX, limitMessage)).default(ALLOCATION_PAGE_DEFAULT),
}).strict();

export type ListAllocationsQuery = z.infer<typeof listAllocationsQuerySchema>;

export interface AllocationPage {
  allocations: AllocationView[];
  /** Pass as `before` for the next (older) page; null when this page is the last. */
  next_before: string | null;
}

/** One page of allocations, newest first (one row more is read to know whether older ones exist). */
export async function listAllocations(db: Db, query: ListAllocationsQuery): Promise<AllocationPage> {
  return db.transaction(async (trx) => {
    const builder = allocationRows(trx).orderBy('a.id', 'desc').limit(query.limit + 1);
    if (query.state === undefined) builder.whereNot('a.state', 'released');
    else if (query.state !== 'all') builder.where('a.state', query.state);
    if (query.before) builder.where('a.id', '<', query.before);
    const rows = (await builder) as AllocationRow[];
    const page = await viewsOf(trx, rows.slice(0, query.limit));
    return { allocations: page, next_before: rows.length > query.limit ? page[page.length - 1]!.allocation_id : null };
  });
}

/**
 * Allocates enrolled host `hostId`: 404 for an unknown or removed host, 409 (audited `refused`)
 * while the host is being removed or already has an allocation that is not released. Audited
 * `agent.server.create` in the transaction that inserts it.
 */
export async function createAllocation(db: Db, input: { hostId: string; label: string | null; by: AuditBy }): Promise<AllocationView> {
  const { hostId, label, by } = input;
  let allocationId: string;
  try {
    allocationId = await db.transaction(async (trx) => {
      const host = await trx('agent_hosts').where({ host_id: hostId }).whereNull('removed_at').forUpdate()
        .first<{ removal_requested_at: Date | null } | undefined>('removal_requested_at');
      if (!host) throw new AppError('not_found', `Host not found: ${hostId}`);
      if (host.removal_requested_at !== null) {
        throw new AppError('conflict', `Host ${hostId} is being removed (requested at ${host.removal_requested_at.toISOString()}); it cannot be allocated`);
      }
      const current = await trx('agent_server_allocations').where({ host_id: hostId }).whereNot('state', 'released')
        .first<{ id: string; state: AllocationState } | undefined>('id', 'state');
      if (current) {
        throw new AppError('conflict', `Host ${hostId} already has server allocation ${current.id} (${current.state}); release it first (DELETE /admin/agent/servers/${current.id})`);
      }
      const [row] = await trx('agent_server_allocations')
        .insert({ host_id: hostId, label, created_by: JSON.stringify({ actor: by.actor, actorIp: by.actorIp ?? null }) })
        .returning<Array<{ id: string }>>('id');
      const id = String(row!.id);
      await recordAudit(trx, {
        ...by, category: 'servers', action: 'agent.server.create', target: allocationTarget(id), outcome: 'succeeded',
        details: { allocation_id: id, host_id: hostId, label, revision: 1 },
      });
      return id;
    });
  } catch (err) {
    if (isAppError(err) && err.code === 'conflict') {
      await recordAudit(db, {
        ...by, category: 'servers', action: 'agent.server.create', target: { type: 'host', id: hostId }, outcome: 'refused', reason: err.message,
        details: { host_id: hostId, label },
      });
    }
    throw err;
  }
  return getAllocation(db, allocationId);
}
