/**
 * The agent audit log's one writer (docs/agent-audit.md): every administrator
 * and system action on the agent platform records one row through {@link recordAudit}.
 *
 * - Pass the transaction that makes the change (`recordAudit(trx, …)`): the action and its row
 *   commit together or not at all.
 * - Reads that disclose stored content are audited *before* they return: {@link auditBeforeDisclose}
 *   turns any failure to write into 503 `service_unavailable`, so the caller discloses nothing.
 * - Text passes the shared rule (lib/text.ts `cleanText`) and is bounded; `details` is bounded
 *   in depth and size ({@link boundDetails}). Administrators are named by user id, never e-mail.
 */
import type { Knex } from 'knex';
import { AppError } from '../../lib/errors';
import { cleanText } from '../../lib/text';

/**
 * What an action is about. The operator API's filter values are `settings`, `servers` (allocations),
 * `measurements` and `content` (event payload reads); `sandboxes`, `hosts`, `deletion` (chat and
 * user deletion, the sweeper) and `database` (database browser and its admin tool) are ours.
 */
export const AUDIT_CATEGORIES = ['settings', 'servers', 'measurements', 'content', 'sandboxes', 'hosts', 'deletion', 'database', 'identity'] as const;
export type AuditCategory = (typeof AUDIT_CATEGORIES)[number];

/**
 * How an action ended: `succeeded` (done), `requested` (accepted and under way, e.g. a workflow
 * will finish it), `refused` (a condition failed; nothing changed), `failed` (tried and failed).
 */
export const AUDIT_OUTCOMES = ['succeeded', 'requested', 'refused', 'failed'] as const;
export type AuditOutcome = (typeof AUDIT_OUTCOMES)[number];

/** Dotted, lower-case, starting `agent.`: `agent.host.slots_changed`, `agent.sandbox.stop_idle`. */
export type AuditAction = `agent.${string}`;
const ACTION = /^agent(\.[a-z0-9_]+)+$/;

/** Who acted: an administrator's account, the `ADMIN_TOKEN` (no account), or a named system actor. */
export type AuditActor =
  | { type: 'user'; userId: number }
  | { type: 'admin_token' }
  | { type: 'system'; name: string };
const SYSTEM_NAME = /^[a-z0-9][a-z0-9-]{0,63}$/;

/** The system actor of the chat deletion sweep (actor `user-deletion-sweeper`, source `system`). */
export const USER_DELETION_SWEEPER = { type: 'system', name: 'user-deletion-sweeper' } as const satisfies AuditActor;

/** The system actor of the idle stop: stops sandboxes idle past the host setting `idle_timeout_seconds` (docs/sandboxes.md "Idle stop"). */
export const IDLE_SANDBOX_STOPPER = { type: 'system', name: 'idle-sandbox-stopper' } as const satisfies AuditActor;

/** The system actor of turn admission: shows a hidden sandbox again when a turn of its chats is admitted (docs/sandboxes.md "Inventory visibility"). */
export const TURN_ADMISSION = { type: 'system', name: 'turn-admission' } as const satisfies AuditActor;

/** Who performs an action and from where: what a route or a system job passes down to the domain. */
export interface AuditBy {
  actor: AuditActor;
  /** The administrator's client address as the API resolved it; none for system actors. */
  actorIp?: string | null;
}

/** One audit entry. `source` follows from the actor: `system` for a system actor, else `admin`. */
export interface AuditEntry extends AuditBy {
  category: AuditCategory;
  action: AuditAction;
  /** What was acted on: `{type: 'host', id: 'host-1'}`, `{type: 'sandbox', id: 'grp_…'}`. */
  target?: { type: string; id: string } | null;
  /** Why (the administrator's words or the refusal's reason); cleaned and cut to 1,000 characters. */
  reason?: string | null;
  outcome: AuditOutcome;
  /** Facts of the action (ids, before/after values); bounded by {@link boundDetails}. Never secrets. */
  details?: Record<string, unknown>;
}

/** The row written: its id (a decimal string, the paging key) and time. */
export interface AuditRecord {
  id: string;
  createdAt: string;
}

/** Bytes of `details` as JSON (UTF-8) beyond which entries are dropped (see {@link boundDetails}). */
export const MAX_DETAILS_BYTES = 8 * 1024;
/** Nesting of `details` beyond which a value is replaced by the string `[nested too deep]`. */
export const MAX_DETAILS_DEPTH = 6;
/** Characters kept of any one string inside `details`. */
export const MAX_DETAILS_STRING = 2000;
export const MAX_REASON_CHARS = 1000;
export const MAX_TARGET_ID_CHARS = 256;
export const MAX_ACTOR_IP_CHARS = 64;

/** `text` cleaned (lib/text.ts) and cut to `max` characters (the cut marked with `…`). */
function bounded(text: string, max: number): string {
  const clean = cleanText(text);
  if (clean.length <= max) return clean;
  // Cut by UTF-16 units (never more characters than PostgreSQL counts), not inside a surrogate pair.
  const head = clean.slice(0, max - 1);
  return `${/[\uD800-\uDBFF]$/.test(head) ? head.slice(0, -1) : head}…`;
}

function boundValue(value: unknown, depth: number): unknown {
  if (typeof value === 'string') return bounded(value, MAX_DETAILS_STRING);
  if (typeof value === 'number') return Number.isFinite(value) ? value : String(value);
  if (typeof value === 'bigint') return value.toString();
  if (value === null || typeof value === 'boolean') return value;
  if (value instanceof Date) return value.toISOString();
  if (typeof value !== 'object') return null; // undefined, functions, symbols
  if (depth >= MAX_DETAILS_DEPTH) return '[nested too deep]';
  if (Array.isArray(value)) return value.map((item) => boundValue(item, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value as Record<string, unknown>)) {
    if (item !== undefined) out[bounded(key, 128)] = boundValue(item, depth + 1);
  }
  return out;
}

/**
 * `details` made safe to store: strings cleaned and cut, depth bounded, and, when the whole is
 * over {@link MAX_DETAILS_BYTES}, the leading entries that fit kept with `_truncated: true` and
 * `_bytes` (the size before cutting). Pure; the writer calls it on every entry.
 */
export function boundDetails(details: Record<string, unknown> | undefined): Record<string, unknown> {
  const clean = (boundValue(details ?? {}, 0) ?? {}) as Record<string, unknown>;
  const size = Buffer.byteLength(JSON.stringify(clean));
  if (size <= MAX_DETAILS_BYTES) return clean;
  const kept: Record<string, unknown> = { _truncated: true, _bytes: size };
  for (const [key, value] of Object.entries(clean)) {
    const next = { ...kept, [key]: value };
    if (Buffer.byteLength(JSON.stringify(next)) <= MAX_DETAILS_BYTES) Object.assign(kept, { [key]: value });
  }
  return kept;
}

/** Throws (a programming error, 500) when an entry breaks a rule no caller input can reach. */
function checkEntry(entry: AuditEntry): void {
  if (!ACTION.test(entry.action) || entry.action.length > 128) throw new AppError('internal', `audit action '${entry.action}' is not a dotted agent.* name`);
  if (!(AUDIT_CATEGORIES as readonly string[]).includes(entry.category)) throw new AppError('internal', `audit category '${entry.category}' is unknown`);
  if (entry.actor.type === 'system' && !SYSTEM_NAME.test(entry.actor.name)) throw new AppError('internal', `system actor '${entry.actor.name}' is not a kebab-case name`);
  if (entry.actor.type === 'user' && !Number.isSafeInteger(entry.actor.userId)) throw new AppError('internal', 'audit actor user id is not an integer');
  if (entry.target && !/^[a-z][a-z0-9_]{0,31}$/.test(entry.target.type)) throw new AppError('internal', `audit target type '${entry.target.type}' is not a snake_case name`);
}

/** The row of `entry` as stored (exported for tests of the bounding rules). */
export function auditRow(entry: AuditEntry): Record<string, unknown> {
  checkEntry(entry);
  const { actor } = entry;
  return {
    category: entry.category,
    action: entry.action,
    source: actor.type === 'system' ? 'system' : 'admin',
    actor_type: actor.type,
    actor_user_id: actor.type === 'user' ? actor.userId : null,
    actor_name: actor.type === 'system' ? actor.name : null,
    actor_ip: entry.actorIp ? bounded(entry.actorIp, MAX_ACTOR_IP_CHARS) : null,
    target_type: entry.target ? entry.target.type : null,
    target_id: entry.target ? bounded(entry.target.id, MAX_TARGET_ID_CHARS) : null,
    reason: entry.reason ? bounded(entry.reason, MAX_REASON_CHARS) : null,
    outcome: entry.outcome,
    details: JSON.stringify(boundDetails(entry.details)),
  };
}

/**
 * Appends one audit row. Pass the transaction of the action it records so both commit or roll
 * back together (a failed insert fails that transaction); pass the pool for a standalone row.
 */
export async function recordAudit(db: Knex | Knex.Transaction, entry: AuditEntry): Promise<AuditRecord> {
  const [row] = await db('agent_audit_log').insert(auditRow(entry)).returning<Array<{ id: string; created_at: Date }>>(['id', 'created_at']);
  return { id: String(row!.id), createdAt: row!.created_at.toISOString() };
}

/**
 * Audit before disclose (operator event content reads): records `entry` and only then lets the caller
 * return what it read. Any failure to write becomes 503 `service_unavailable` (the cause kept,
 * the message saying nothing was disclosed), so a caller that awaits this first fails closed.
 */
export async function auditBeforeDisclose(db: Knex | Knex.Transaction, entry: AuditEntry): Promise<AuditRecord> {
  try {
    return await recordAudit(db, entry);
  } catch (err) {
    throw new AppError('service_unavailable', 'The audit log could not be written, so nothing was disclosed; try again later', { cause: err });
  }
}
