/**
 * The owner's chats grouped by repository (docs/agent-api.md "Projects"): one group per
 * repository and one `repo: null` group for the chats in temporary workspaces, so a project list
 * never drops repo-less chats nor reports them under an empty string. Counts the same chats as the
 * job lists: only the owner's own, soft-deleted ones left out.
 */
import { z } from 'zod';
import type { Db } from '../../lib/db';

/** No parameters: an unknown one is a 400 naming it rather than being ignored. */
export const projectsQuerySchema = z.object({}).strict();

export interface ProjectGroup {
  /** The repository, or null for the chats in temporary workspaces. */
  repo: string | null;
  temporary: boolean;
  chats: number;
  /** The newest `updated_at` among the group's chats (a new turn moves it). */
  last_activity_at: string;
}

interface GroupRow { repo: string | null; chats: string | number; last_activity_at: Date }

/** Groups newest activity first; equal activity orders by repository, the temporary group last. */
export async function listProjects(db: Db, ownerId: number): Promise<{ projects: ProjectGroup[] }> {
  const rows = await db('agent_jobs')
    .where('owner_id', ownerId).whereNull('deleted_at')
    .groupBy('repo')
    .select<GroupRow[]>('repo', db.raw('count(*) as chats'), db.raw('max(updated_at) as last_activity_at'))
    .orderByRaw('max(updated_at) desc, repo asc nulls last');
  return {
    projects: rows.map((row) => ({
      repo: row.repo, temporary: row.repo === null, chats: Number(row.chats), last_activity_at: row.last_activity_at.toISOString(),
    })),
  };
}
