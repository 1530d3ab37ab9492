/**
 * The public stats job (docs/public-stats.md): builds a snapshot of the last `weeks` whole UTC
 * weeks from `api_logs` and `users`, withholding every figure about fewer than three accounts, and
 * stores it as the newest row of `public_stats_snapshots`, keeping the {@link SNAPSHOTS_KEPT}
 * newest. Run daily by a Temporal Schedule of the control worker, or by hand
 * (`npm run public-stats`). `GET /public-stats` serves the newest row.
 */
import type { Db } from '../../../lib/db';
import {
  countOrWithheld, section, usageOrWithheld, weeksOf, windowOf, type PublicStatsContent,
} from './content';
import { accountCounts, totalUsage, usageBy, usageByScript, weeklyUsage } from './queries';

/** Snapshots kept; older ones are deleted when a new one is stored. */
export const SNAPSHOTS_KEPT = 30;

export interface SnapshotOptions {
  weeks: number;
  /** Include the language section (`DB_STORE_FULL_CONTENT=true`: user-message text is stored). */
  languages: boolean;
  now?: Date;
}

/** Builds a snapshot's content; reads only (one repeatable-read transaction, so every figure agrees). */
export async function buildPublicStats(db: Db, options: SnapshotOptions): Promise<PublicStatsContent> {
  const now = options.now ?? new Date();
  const window = windowOf(now, options.weeks);
  return db.transaction(async (trx) => {
    const totals = await totalUsage(trx, window);
    const accounts = await accountCounts(trx, window);
    const content: PublicStatsContent = {
      version: 1,
      generated_at: now.toISOString(),
      window: { weeks: options.weeks, start: window.start.toISOString(), end: window.end.toISOString() },
      min_accounts: 3,
      totals: usageOrWithheld(totals),
      accounts: { registered: countOrWithheld(accounts.registered), new_in_window: countOrWithheld(accounts.newInWindow) },
      weeks: weeksOf({ start: window.start, weeks: options.weeks }, await weeklyUsage(trx, window)),
      models: section(await usageBy(trx, window, 'model')),
      surfaces: section(await usageBy(trx, window, 'surface')),
    };
    if (options.languages) content.languages = section(await usageByScript(trx, window));
    return content;
  }, { isolationLevel: 'repeatable read', readOnly: true });
}

export interface StoredSnapshot {
  id: number;
  created_at: string;
  content: PublicStatsContent;
}

/** Stores a snapshot and deletes all but the {@link SNAPSHOTS_KEPT} newest; answers the new row's id. */
export async function storePublicStats(db: Db, content: PublicStatsContent): Promise<number> {
  return db.transaction(async (trx) => {
    const [row] = await trx('public_stats_snapshots')
      .insert({ window_weeks: content.window.weeks, content: JSON.stringify(content) })
      .returning<Array<{ id: string }>>('id');
    await trx.raw(
      'delete from public_stats_snapshots where id not in (select id from public_stats_snapshots order by id desc limit ?)',
      [SNAPSHOTS_KEPT],
    );
    return Number(row!.id);
  });
}

/** Builds and stores a snapshot (the job's one step); answers the row's id and its content. */
export async function takePublicStatsSnapshot(db: Db, options: SnapshotOptions): Promise<{ id: number; content: PublicStatsContent }> {
  const content = await buildPublicStats(db, options);
  return { id: await storePublicStats(db, content), content };
}

/** The newest snapshot, or undefined when none was taken yet. */
export async function newestPublicStats(db: Db): Promise<StoredSnapshot | undefined> {
  const row = await db('public_stats_snapshots').orderBy('id', 'desc').first<{ id: string; created_at: Date; content: PublicStatsContent } | undefined>('id', 'created_at', 'content');
  return row && { id: Number(row.id), created_at: row.created_at.toISOString(), content: row.content };
}

/**
 * The job as the control worker's activity runs it (activities/control/public-stats-activities.ts):
 * a snapshot over `weeks`, with the language section when `languages` (`DB_STORE_FULL_CONTENT`).
 */
export function publicStatsJob(db: Db, languages: boolean): (weeks: number) => Promise<{ snapshotId: number; windowEnd: string }> {
  return async (weeks) => {
    const { id, content } = await takePublicStatsSnapshot(db, { weeks, languages });
    return { snapshotId: id, windowEnd: content.window.end };
  };
}
