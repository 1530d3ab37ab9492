/**
 * The keys access tokens are signed with (docs/identity.md "Signing keys"). The configured
 * `AUTH_JWT_SECRET` is the bootstrap key: it signs until the first rotation, so a deployment that
 * never rotates behaves as before. A rotation stores a new random key (sealed at rest with a key
 * derived from `AUTH_JWT_SECRET`) that starts signing a little later (two sync intervals, so every
 * process has read it before anyone signs with it); the key it supersedes keeps verifying until the
 * longest token it could have signed has expired, then it is retired (its secret wiped).
 *
 * Every process (gateways and APIs) holds the keys in memory and re-reads them every
 * `AUTH_SIGNING_KEY_SYNC_SECONDS`; verifying a token reads no database.
 */
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import type { Db } from '../db';
import type { Logger } from '../logger';
import { Periodic } from '../periodic';
import { SecretSealer } from '../sealed-secret';
import type { JwtKey } from './jwt';

/** The row recording when the bootstrap secret stopped verifying (it has no stored secret). */
export const BOOTSTRAP_KID = 'bootstrap';
const SEALING_PURPOSE = 'auth-signing-keys-v1';

interface KeyRow {
  kid: string;
  sealed_secret: string | null;
  activates_at: Date;
  retires_at: Date | null;
}

interface RingKey {
  kid: string;
  secret: string;
  activatesAtMs: number;
  retiresAtMs: number | null;
}

/** The store a ring re-reads: the database, the sealer of the stored secrets and the interval. */
export interface SigningKeyStore {
  db: Db;
  log: Logger;
  syncMs: number;
}

function sealedName(kid: string): string {
  return `auth_signing_key:${kid}`;
}

/** The sealer of stored signing keys: derived from the bootstrap secret, for this purpose only. */
export function signingKeySealer(bootstrapSecret: string): SecretSealer {
  return new SecretSealer(bootstrapSecret, SEALING_PURPOSE);
}

export class SigningKeyRing {
  private keys = new Map<string, RingKey>();
  private bootstrapRetiresAtMs: number | null = null;
  private readonly periodic: Periodic | undefined;
  /** Seals and opens the stored keys (derived from the bootstrap secret). */
  readonly sealer: SecretSealer;
  private readonly unreadable = new Set<string>();

  /** `store` absent: the bootstrap secret only (no database, or a per-process random secret). */
  constructor(private readonly bootstrapSecret: string, readonly store?: SigningKeyStore) {
    this.sealer = signingKeySealer(bootstrapSecret);
    this.periodic = store ? new Periodic(() => this.load(), store.syncMs, store.log, 'signing key refresh') : undefined;
  }

  /** Whether keys can be rotated here (a shared configured secret and a database). */
  get rotatable(): boolean {
    return this.store !== undefined;
  }

  /** Loads the keys, then re-reads them every sync interval (a failed first read is retried). */
  async start(): Promise<void> {
    await this.periodic?.start({ retryFirst: true });
  }

  stop(): void {
    this.periodic?.stop();
  }

  /** Re-reads the stored keys now (the rotating process calls it, so it never waits for a tick). */
  async load(): Promise<void> {
    if (!this.store) return;
    const rows = await this.store.db('auth_signing_keys').select<KeyRow[]>('kid', 'sealed_secret', 'activates_at', 'retires_at');
    const keys = new Map<string, RingKey>();
    let bootstrapRetiresAtMs: number | null = null;
    for (const row of rows) {
      if (row.kid === BOOTSTRAP_KID) bootstrapRetiresAtMs = row.retires_at?.getTime() ?? null;
      if (row.kid === BOOTSTRAP_KID || row.sealed_secret === null) continue;
      const secret = this.open(row.kid, row.sealed_secret);
      if (secret !== undefined) keys.set(row.kid, { kid: row.kid, secret, activatesAtMs: row.activates_at.getTime(), retiresAtMs: row.retires_at?.getTime() ?? null });
    }
    this.keys = keys;
    this.bootstrapRetiresAtMs = bootstrapRetiresAtMs;
  }

  private open(kid: string, sealed: string): string | undefined {
    try {
      return this.sealer.open(sealedName(kid), sealed);
    } catch (err) {
      // Another AUTH_JWT_SECRET sealed it: its tokens cannot verify here. Said once per key.
      if (!this.unreadable.has(kid)) {
        this.unreadable.add(kid);
        this.store?.log.error({ err, event: 'signing_key_unreadable', kid }, 'A stored signing key cannot be opened with this process\'s AUTH_JWT_SECRET; tokens it signed are refused here');
      }
      return undefined;
    }
  }

  /** The key new tokens are signed with: the newest rotated key already active, else the bootstrap secret. */
  signingKey(nowMs = Date.now()): JwtKey {
    let newest: RingKey | undefined;
    for (const key of this.keys.values()) {
      if (key.activatesAtMs <= nowMs && (!newest || key.activatesAtMs > newest.activatesAtMs)) newest = key;
    }
    return newest ? { secret: newest.secret, kid: newest.kid } : { secret: this.bootstrapSecret };
  }

  /** The secret verifying tokens of `kid` (undefined: the bootstrap secret) until it retires; unknown kids have none. */
  verificationSecret(kid: string | undefined, nowMs = Date.now()): string | undefined {
    if (kid === undefined) return this.bootstrapRetiresAtMs !== null && this.bootstrapRetiresAtMs <= nowMs ? undefined : this.bootstrapSecret;
    const key = this.keys.get(kid);
    if (!key || (key.retiresAtMs !== null && key.retiresAtMs <= nowMs)) return undefined;
    return key.secret;
  }
}

export interface Rotation {
  kid: string;
  activates_at: string;
  /** The key that signed until now, and when it stops verifying. */
  superseded: { kid: string; retires_at: string };
  /** Keys whose secrets this rotation wiped (their last tokens had expired). */
  retired: string[];
}

export interface RotationOptions {
  /** The longest lifetime of a token the superseded key may have signed, seconds. */
  maxTokenLifetimeSeconds: number;
  /** How long after the rotation the new key starts signing, milliseconds. */
  activationDelayMs: number;
  byUserId: number | null;
  /** Runs inside the rotation's transaction (the audit row: both commit or neither). */
  within?: (trx: Knex.Transaction, rotation: Rotation) => Promise<void>;
}

/** Rotates the signing key (see the module comment); one rotation at a time (table lock). */
export async function rotateSigningKey(ring: SigningKeyRing, options: RotationOptions): Promise<Rotation> {
  if (!ring.store) throw new Error('signing keys cannot rotate without a database and a configured AUTH_JWT_SECRET');
  const sealer = ring.sealer;
  const rotation = await ring.store.db.transaction(async (trx) => {
    await trx.raw('lock table auth_signing_keys in share row exclusive mode');
    const [{ now }] = (await trx.raw<{ rows: Array<{ now: Date }> }>('select now() as now')).rows as [{ now: Date }];
    const activatesAt = new Date(now.getTime() + options.activationDelayMs);
    const retiresAt = new Date(activatesAt.getTime() + options.maxTokenLifetimeSeconds * 1000);
    const current = await trx('auth_signing_keys').whereNot({ kid: BOOTSTRAP_KID }).whereNull('retires_at')
      .orderBy('activates_at', 'desc').first<{ kid: string } | undefined>('kid');
    if (current) await trx('auth_signing_keys').where({ kid: current.kid }).update({ retires_at: retiresAt });
    else await trx('auth_signing_keys').insert({ kid: BOOTSTRAP_KID, sealed_secret: null, activates_at: new Date(0), retires_at: retiresAt });
    const retired = await trx('auth_signing_keys').whereNotNull('sealed_secret').where('retires_at', '<=', now)
      .update({ sealed_secret: null }).returning<Array<{ kid: string }>>('kid');
    const kid = `k${randomBytes(12).toString('base64url')}`;
    const secret = randomBytes(32).toString('base64url');
    await trx('auth_signing_keys').insert({ kid, sealed_secret: sealer.seal(sealedName(kid), secret), activates_at: activatesAt, created_by_user_id: options.byUserId });
    const result: Rotation = {
      kid, activates_at: activatesAt.toISOString(),
      superseded: { kid: current?.kid ?? BOOTSTRAP_KID, retires_at: retiresAt.toISOString() },
      retired: retired.map((r) => r.kid),
    };
    await options.within?.(trx, result);
    return result;
  });
  await ring.load();
  return rotation;
}

/** The stored keys for the administrators' view (never a secret). */
export async function listSigningKeys(db: Db): Promise<Array<{ kid: string; created_at: string; activates_at: string; retires_at: string | null; retired: boolean }>> {
  const rows = await db('auth_signing_keys').orderBy('activates_at', 'desc')
    .select<Array<KeyRow & { created_at: Date }>>('kid', 'sealed_secret', 'created_at', 'activates_at', 'retires_at');
  const now = Date.now();
  return rows.map((r) => ({
    kid: r.kid, created_at: r.created_at.toISOString(), activates_at: r.activates_at.toISOString(), retires_at: r.retires_at?.toISOString() ?? null,
    retired: r.retires_at !== null && r.retires_at.getTime() <= now,
  }));
}
