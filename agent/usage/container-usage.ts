/**
 * What an owner's usage page (`/settings/usage`; docs/agent-api.md "Usage") shows
 * of their sandboxes: one entry per sandbox group holding one of their chats, and running time
 * per UTC day. Owner-scoped, and never a host, container id, image or generation: a sandbox is
 * named by the owner's first chat in it (job id and title), which the owner already knows.
 */
import type { Db } from '../../lib/db';
import { OBSERVATION_STALE_SECONDS } from '../sandboxes/sandbox-inventory';
import type { UsageWindow } from './usage-window';

export interface OwnerContainer {
  /** The owner's first chat in the sandbox: its stable public name. */
  job_id: string;
  title: string;
  /** Every chat of the owner in the sandbox (forks share it), oldest first. */
  job_ids: string[];
  state: string;
  created_at: string;
  last_activity_at: string;
  /** Running time counted in the window, seconds. */
  running_seconds: number;
  /** The latest reading of its container; all null when never observed. */
  resources: { observed_at: string | null; cpu_percent: number | null; memory_bytes: number | null; disk_bytes: number | null; stale: boolean };
}

export interface DailyUsage {
  days: UsageWindow;
  /** First and last UTC day of the window, `YYYY-MM-DD`. */
  from: string;
  to: string;
  /** Every day of the window, oldest first (zero when nothing ran). */
  daily: Array<{ day: string; running_seconds: number; running_hours: number }>;
  total_running_seconds: number;
}

interface GroupRow {
  group_id: string; state: string; created_at: Date; last_activity_at: Date; observed_at: Date | null;
  observed_cpu_percent: number | null; observed_memory_bytes: string | null; observed_disk_bytes: string | null; observation_stale: boolean;
}

/** `WINDOW_START`: the first UTC day of a window of `?` days, by the database clock. */
const WINDOW_START = `((now() at time zone 'utc')::date - (?::int - 1))`;
const TODAY = `(now() at time zone 'utc')::date`;

const seconds = (value: number): number => Math.round(value);

/** The owner's sandboxes (not deleted), newest activity first. */
export async function listOwnerContainers(db: Db, ownerId: number, days: UsageWindow): Promise<OwnerContainer[]> {
  const chats = await db('agent_sandbox_members as m').join('agent_jobs as j', 'j.job_id', 'm.job_id')
    .where('j.owner_id', ownerId).whereNull('j.deleted_at')
    .orderBy([{ column: 'm.created_at' }, { column: 'm.job_id' }])
    .select<Array<{ group_id: string; job_id: string; title: string }>>('m.group_id', 'm.job_id', 'j.title');
  if (chats.length === 0) return [];
  const groupIds = [...new Set(chats.map((c) => c.group_id))];
  const groups = await db('agent_sandboxes').whereIn('group_id', groupIds).whereNot('state', 'deleted')
    .orderBy([{ column: 'last_activity_at', order: 'desc' }, { column: 'group_id' }])
    .select<GroupRow[]>(
      'group_id', 'state', 'created_at', 'last_activity_at', 'observed_at', 'observed_cpu_percent', 'observed_memory_bytes', 'observed_disk_bytes',
      db.raw(`(observed_at is null or observed_at <= now() - make_interval(secs => ?)) as observation_stale`, [OBSERVATION_STALE_SECONDS]),
    );
  const usage = await db('agent_sandbox_usage_daily').whereIn('group_id', groupIds).where('owner_id', ownerId)
    .whereRaw(`day >= ${WINDOW_START}`, [days]).groupBy('group_id')
    .select<Array<{ group_id: string; seconds: number }>>('group_id', db.raw('sum(running_seconds)::float8 as seconds'));
  return groups.map((g) => {
    const mine = chats.filter((c) => c.group_id === g.group_id);
    return {
      job_id: mine[0]!.job_id,
      title: mine[0]!.title,
      job_ids: mine.map((c) => c.job_id),
      state: g.state,
      created_at: g.created_at.toISOString(),
      last_activity_at: g.last_activity_at.toISOString(),
      running_seconds: seconds(usage.find((u) => u.group_id === g.group_id)?.seconds ?? 0),
      resources: {
        observed_at: g.observed_at?.toISOString() ?? null,
        cpu_percent: g.observed_cpu_percent,
        memory_bytes: g.observed_memory_bytes === null ? null : Number(g.observed_memory_bytes),
        disk_bytes: g.observed_disk_bytes === null ? null : Number(g.observed_disk_bytes),
        stale: g.observation_stale,
      },
    };
  });
}

/** The owner's running time per UTC day over the window: every day present, zeros included. */
export async function ownerDailyUsage(db: Db, ownerId: number, days: UsageWindow): Promise<DailyUsage> {
  const result = await db.raw<{ rows: Array<{ day: string; seconds: number }> }>(`
    select to_char(d, 'YYYY-MM-DD') as day, coalesce(sum(u.running_seconds), 0)::float8 as seconds
    from generate_series(${WINDOW_START}, ${TODAY}, interval '1 day') as d
    left join agent_sandbox_usage_daily u on u.day = d::date and u.owner_id = ?
    group by d order by d`, [days, ownerId]);
  const daily = result.rows.map((r) => ({ day: r.day, running_seconds: seconds(r.seconds), running_hours: Math.round((r.seconds / 3600) * 100) / 100 }));
  return {
    days, from: daily[0]!.day, to: daily[daily.length - 1]!.day, daily,
    total_running_seconds: seconds(result.rows.reduce((sum, r) => sum + r.seconds, 0)),
  };
}
