/**
 * Probe leases (`routewise_probe_leases`): before the routewise strategy probes a model's
 * endpoints whose capacity is unknown, a gateway worker takes the model's lease, so two workers
 * never probe one model concurrently. Each operation is one SQL statement judged on the database's
 * clock (no skew between workers): acquire inserts the row or takes over an expired one (or
 * extends its own), renew extends only an unexpired lease of the same holder, release deletes only
 * the holder's own row. Off the hot path: never called while serving a request.
 */
import type { Knex } from 'knex';
import type { Db } from '../../lib/db';

export interface LeaseRequest {
  modelId: string;
  /** Who holds it: unique per worker process (e.g. `<hostname>:<pid>:<random>`). */
  holder: string;
  /** How long the lease lasts from now, in milliseconds (renew before it runs out). */
  ttlMs: number;
}

type Queryable = Db | Knex.Transaction;

function ttl(ttlMs: number): string {
  if (!(Number.isFinite(ttlMs) && ttlMs > 0)) throw new RangeError(`lease ttlMs must be a positive number, not ${ttlMs}`);
  return `${Math.ceil(ttlMs)} milliseconds`;
}

/** Takes the model's lease when it is free, expired, or already ours (extending it). True when held. */
export async function acquireProbeLease(db: Queryable, lease: LeaseRequest): Promise<boolean> {
  const result = await db.raw<{ rows: unknown[] }>(
    `insert into routewise_probe_leases (model_id, holder, acquired_at, expires_at)
     values (?, ?, now(), now() + ?::interval)
     on conflict (model_id) do update
       set holder = excluded.holder,
           acquired_at = case when routewise_probe_leases.holder = excluded.holder then routewise_probe_leases.acquired_at else excluded.acquired_at end,
           expires_at = excluded.expires_at
       where routewise_probe_leases.expires_at <= now() or routewise_probe_leases.holder = excluded.holder
     returning model_id`,
    [lease.modelId, lease.holder, ttl(lease.ttlMs)],
  );
  return result.rows.length === 1;
}

/** Extends a lease we hold and that has not expired. False when it expired or another holder has it. */
export async function renewProbeLease(db: Queryable, lease: LeaseRequest): Promise<boolean> {
  const result = await db.raw<{ rows: unknown[] }>(
    `update routewise_probe_leases set expires_at = now() + ?::interval
     where model_id = ? and holder = ? and expires_at > now()
     returning model_id`,
    [ttl(lease.ttlMs), lease.modelId, lease.holder],
  );
  return result.rows.length === 1;
}

/** Gives our lease back (another worker may take it at once). False when we did not hold it. */
export async function releaseProbeLease(db: Queryable, lease: Pick<LeaseRequest, 'modelId' | 'holder'>): Promise<boolean> {
  const deleted = await db('routewise_probe_leases').where({ model_id: lease.modelId, holder: lease.holder }).delete();
  return deleted === 1;
}

/**
 * Runs `probe` under the model's lease: `undefined` without running it when another worker holds
 * the lease; the lease is released afterwards whether the probe succeeded or threw.
 */
export async function withProbeLease<T>(db: Db, lease: LeaseRequest, probe: () => Promise<T>): Promise<{ value: T } | undefined> {
  if (!(await acquireProbeLease(db, lease))) return undefined;
  try {
    return { value: await probe() };
  } finally {
    await releaseProbeLease(db, lease);
  }
}
