/**
 * `npm run create-admin -- --email <EMAIL> [--password-stdin]`: creates an administrator out of
 * band (the preferred way to get a first admin, safer than `ADMIN_EMAILS`), or promotes and re-keys an existing
 * account. The password comes from a hidden prompt, or from the first line of standard input
 * with `--password-stdin` (for scripts). Uses `DATABASE_URL` (the dev stack's when unset).
 * The account also gets the `agent.use` permission (kept with any it had), so the first
 * administrator can start agent chats at once, with no separate grant step.
 */
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { createDb, type Db } from '../../lib/db';
import { hashPassword } from '../../lib/identity/passwords';
import { loadSettings } from '../../lib/settings';
import { DEV_DATABASE_URL } from '../dev/postgres';

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const MIN_PASSWORD = 10;

/** The permission the script grants beside the admin role: agent chats (docs/identity.md). */
export const FIRST_ADMIN_PERMISSION = 'agent.use';

/** Creates or promotes the account (admin, `agent.use` added); returns what happened. */
export async function createAdmin(db: Db, email: string, password: string): Promise<{ id: number; created: boolean }> {
  if (!EMAIL.test(email)) throw new Error(`--email: '${email}' is not an e-mail address`);
  if (password.length < MIN_PASSWORD) throw new Error(`the password must be at least ${MIN_PASSWORD} characters`);
  const passwordHash = await hashPassword(password);
  return db.transaction(async (trx) => {
    const existing = await trx('users').whereRaw('lower(email) = lower(?)', [email]).forUpdate().first<{ id: string } | undefined>();
    if (existing) {
      await trx('users').where({ id: existing.id }).update({
        role: 'admin', password_hash: passwordHash, suspended_at: null, deleted_at: null,
        permissions: trx.raw(`case when ? = any(permissions) then permissions else array_append(permissions, ?) end`, [FIRST_ADMIN_PERMISSION, FIRST_ADMIN_PERMISSION]),
        email_verified_at: trx.raw('coalesce(email_verified_at, now())'), updated_at: trx.fn.now(),
      });
      await trx('refresh_sessions').where({ user_id: existing.id }).whereNull('revoked_at').update({ revoked_at: trx.fn.now() });
      return { id: Number(existing.id), created: false };
    }
    const [row] = await trx('users').insert({ email, password_hash: passwordHash, role: 'admin', permissions: [FIRST_ADMIN_PERMISSION], email_verified_at: trx.fn.now() }).returning<Array<{ id: string }>>('id');
    return { id: Number(row!.id), created: true };
  });
}

function readFirstLine(): Promise<string> {
  return new Promise((resolve, reject) => {
    const rl = createInterface({ input: process.stdin });
    let done = false;
    rl.once('line', (line) => {
      done = true;
      rl.close();
      resolve(line);
    });
    rl.once('close', () => {
      if (!done) reject(new Error('--password-stdin: standard input ended without a line'));
    });
  });
}

/** Reads a password from the terminal without echoing it. */
function promptHidden(question: string): Promise<string> {
  const stdin = process.stdin;
  if (!stdin.isTTY) return Promise.reject(new Error('no terminal for the password prompt: use --password-stdin'));
  process.stdout.write(question);
  stdin.setRawMode(true);
  stdin.resume();
  let value = '';
  return new Promise((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      for (const ch of chunk.toString('utf8')) {
        if (ch === '\r' || ch === '\n') {
          finish();
          resolve(value);
          return;
        }
        if (ch === '\u0003') {
          finish();
          reject(new Error('cancelled'));
          return;
        }
        if (ch === '\u007f') value = value.slice(0, -1);
        else value += ch;
      }
    };
    const finish = () => {
      stdin.off('data', onData);
      stdin.setRawMode(false);
      stdin.pause();
      process.stdout.write('\n');
    };
    stdin.on('data', onData);
  });
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { email: { type: 'string' }, 'password-stdin': { type: 'boolean', default: false } }, strict: true });
  if (!values.email) throw new Error('usage: npm run create-admin -- --email <EMAIL> [--password-stdin]');
  let password: string;
  if (values['password-stdin']) {
    password = await readFirstLine();
  } else {
    password = await promptHidden('Password: ');
    if ((await promptHidden('Repeat password: ')) !== password) throw new Error('the passwords do not match');
  }
  const settings = loadSettings(process.env);
  const db = createDb({ url: settings.DATABASE_URL ?? DEV_DATABASE_URL, applicationName: 'create-admin', poolMax: 1 });
  try {
    const result = await createAdmin(db, values.email, password);
    console.log(result.created
      ? `Created administrator ${values.email} (user id ${result.id}), with agent.use`
      : `Promoted ${values.email} (user id ${result.id}) to administrator with the new password, with agent.use`);
  } finally {
    await db.destroy();
  }
}

if (require.main === module) {
  main().catch((err: unknown) => {
    console.error(`create-admin: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  });
}
