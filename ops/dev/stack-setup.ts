/**
 * What `npm start` and `npm run cluster` both prepare before they start processes: an execution
 * host's enrollment (credential kept in `.data/host/<host>.credential`, mode 600), the dev-stack
 * secrets kept in `.data/secrets/`, and the `/health` URL of a server.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createDb } from '../../lib/db';
import { enrollHost } from '../../agent/hosts/host-registry';
import { secretMatches } from '../../lib/identity/constant-time';
import { DATA } from './sh';

/** A host id from a machine name or an operator's choice: lower case, `a-z 0-9 . _ -`, at most 63 characters. */
export function normalizeHostId(raw: string): string {
  return raw.toLowerCase().replace(/[^a-z0-9._-]/g, '-').slice(0, 63);
}

/** `hostId` and its enrollment credential, enrolled once and kept under `.data/host/`; `say` is told of a new enrollment. */
export async function ensureHostEnrollment(databaseUrl: string, hostId: string, say: (message: string) => void): Promise<{ hostId: string; credential: string }> {
  const file = join(DATA, 'host', `${hostId}.credential`);
  const db = createDb({ url: databaseUrl, applicationName: 'start' });
  try {
    // Reuse the kept credential only while it still matches the enrollment (a re-enrollment rotates it).
    const row = await db('agent_hosts').where({ host_id: hostId }).whereNull('removed_at').first<{ credential_hash: string } | undefined>('credential_hash');
    const kept = existsSync(file) ? readFileSync(file, 'utf8').trim() : undefined;
    if (row && kept && secretMatches(kept, row.credential_hash)) return { hostId, credential: kept };
    const enrolled = await enrollHost(db, hostId);
    mkdirSync(join(DATA, 'host'), { recursive: true, mode: 0o700 });
    writeFileSync(file, enrolled.credential, { mode: 0o600 });
    say(`enrolled this machine as execution host ${hostId}`);
    return enrolled;
  } finally {
    await db.destroy();
  }
}

export type DevSecretName = 'AUTH_JWT_SECRET' | 'GATEWAY_GRANT_DISPATCH_TOKEN' | 'AGENT_SETTINGS_ENCRYPTION_KEY' | 'AGENT_CONTROL_TOKEN_SECRET';

/**
 * A dev-stack secret: the environment's value when set, else a random one kept in
 * `.data/secrets/<file>` (mode 0600) so it survives restarts (logins keep working, the control
 * worker and the gateway keep agreeing on the grant dispatch token, saved credential settings stay
 * readable).
 */
export function devSecret(envName: DevSecretName, file: string): string {
  const fromEnv = process.env[envName];
  if (fromEnv) return fromEnv;
  const dir = join(DATA, 'secrets');
  const path = join(dir, file);
  if (!existsSync(path)) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    writeFileSync(path, randomBytes(48).toString('base64url'), { mode: 0o600 });
  }
  return readFileSync(path, 'utf8').trim();
}

/** The four secrets every process of the stack shares. */
export function devSecrets(): Record<DevSecretName, string> {
  return {
    AUTH_JWT_SECRET: devSecret('AUTH_JWT_SECRET', 'auth-jwt-secret'),
    GATEWAY_GRANT_DISPATCH_TOKEN: devSecret('GATEWAY_GRANT_DISPATCH_TOKEN', 'grant-dispatch-token'),
    AGENT_SETTINGS_ENCRYPTION_KEY: devSecret('AGENT_SETTINGS_ENCRYPTION_KEY', 'settings-encryption-key'),
    AGENT_CONTROL_TOKEN_SECRET: devSecret('AGENT_CONTROL_TOKEN_SECRET', 'control-token-secret'),
  };
}

/** The `/health` URL of a server listening on `host:port` (a wildcard address is reached on loopback). */
export function healthUrl(host: string, port: number): string {
  const reachable = host === '0.0.0.0' || host === '::' || host === '' ? '127.0.0.1' : host;
  return `http://${reachable.includes(':') ? `[${reachable}]` : reachable}:${port}/health`;
}
