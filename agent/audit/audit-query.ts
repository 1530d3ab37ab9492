/**
 * Reading the agent audit log (`GET /admin/agent/audit-log`; docs/agent-audit.md):
 * newest first by id (the order rows were written), optionally one category, paged by `before`
 * (the oldest id of the previous page). Administrators appear by user id only: nothing here
 * joins the users table, so no e-mail can reach the page.
 */
import { z } from 'zod';
import type { Db } from '../../lib/db';
import { AUDIT_CATEGORIES, type AuditCategory, type AuditOutcome } from './audit-log';

/** Default and largest page sizes. */
export const AUDIT_PAGE_DEFAULT = 50;
export const AUDIT_PAGE_MAX = 200;

/** The route's query: `category`, `before` (an audit id), `limit` (1..200, default 50); nothing else. */
export const auditQuerySchema = z.object({
  category: z.enum(AUDIT_CATEGORIES).optional(),
  before: z.string().regex(/^[1-9][0-9]{0,17}$/, 'must be an audit entry id (a positive decimal integer)').optional(),
  limit: z.string().regex(/^[0-9]{1,4}$/, `must be an integer from 1 to ${AUDIT_PAGE_MAX}`)
    .transform(Number)
    .pipe(z.number().int().min(1, `must be an integer from 1 to ${AUDIT_PAGE_MAX}`).max(AUDIT_PAGE_MAX, `must be an integer from 1 to ${AUDIT_PAGE_MAX}`))
    .default(AUDIT_PAGE_DEFAULT),
}).strict();

export type AuditQuery = z.infer<typeof auditQuerySchema>;

/** One audit row as operators see it. */
export interface AuditLogEntry {
  id: string;
  created_at: string;
  category: AuditCategory;
  action: string;
  source: 'admin' | 'system';
  /** `{type: 'user', user_id}`, `{type: 'admin_token'}` or `{type: 'system', name}`. */
  actor: { type: 'user'; user_id: number } | { type: 'admin_token' } | { type: 'system'; name: string };
  actor_ip: string | null;
  target: { type: string; id: string } | null;
  reason: string | null;
  outcome: AuditOutcome;
  details: Record<string, unknown>;
}

export interface AuditLogPage {
  entries: AuditLogEntry[];
  /** Pass as `before` for the next (older) page; null when this page is the last. */
  next_before: string | null;
}

/** One `agent_audit_log` row as PostgreSQL returns it. */
export interface AuditRow {
  id: string;
  created_at: Date;
  category: AuditCategory;
  action: string;
  source: 'admin' | 'system';
  actor_type: 'user' | 'admin_token' | 'system';
  actor_user_id: string | null;
  actor_name: string | null;
  actor_ip: string | null;
  target_type: string | null;
  target_id: string | null;
  reason: string | null;
  outcome: AuditOutcome;
  details: Record<string, unknown>;
}

function actorOf(row: AuditRow): AuditLogEntry['actor'] {
  if (row.actor_type === 'user') return { type: 'user', user_id: Number(row.actor_user_id) };
  if (row.actor_type === 'system') return { type: 'system', name: row.actor_name ?? '' };
  return { type: 'admin_token' };
}

function entryOf(row: AuditRow): AuditLogEntry {
  return {
    id: String(row.id),
    created_at: row.created_at.toISOString(),
    category: row.category,
    action: row.action,
    source: row.source,
    actor: actorOf(row),
    actor_ip: row.actor_ip,
    target: row.target_type !== null && row.target_id !== null ? { type: row.target_type, id: row.target_id } : null,
    reason: row.reason,
    outcome: row.outcome,
    details: row.details,
  };
}

/** One page of the audit log, newest first (one row more is read to know whether older ones exist). */
export async function listAuditLog(db: Db, query: AuditQuery): Promise<AuditLogPage> {
  const builder = db('agent_audit_log').select<AuditRow[]>('*').orderBy('id', 'desc').limit(query.limit + 1);
  if (query.category) builder.where({ category: query.category });
  if (query.before) builder.where('id', '<', query.before);
  const rows = await builder;
  const page = rows.slice(0, query.limit).map(entryOf);
  return { entries: page, next_before: rows.length > query.limit ? page[page.length - 1]!.id : null };
}
