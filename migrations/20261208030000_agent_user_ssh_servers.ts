/**
 * Owner SSH into a chat's retained sandbox (docs/ssh.md): `agent_ssh_keys` holds each owner's
 * registered SSH public keys (at most 10; the canonical `type base64` line and its SHA256
 * fingerprint), and `agent_hosts` gains where owners reach a host's SSH server (`ssh_host`,
 * `ssh_port`: reported by the host runner's heartbeat, null when its server is off).
 * `down` refuses while keys are registered: owners would lose them silently.
 */
import type { Knex } from 'knex';

export const TABLES = ['agent_ssh_keys'] as const;

const MIGRATION = '20261208030000_agent_user_ssh_servers';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('agent_ssh_keys', (t) => {
    t.bigIncrements('id').primary();
    t.bigInteger('user_id').notNullable().references('users.id').onDelete('CASCADE');
    /** The owner's label (the key's comment by default). */
    t.text('name').notNullable();
    /** `ssh-ed25519`, `ssh-rsa`, `ecdsa-sha2-nistp256|384|521`. */
    t.text('key_type').notNullable();
    /** The canonical one-line public key, `<type> <base64>` (no comment). */
    t.text('public_key').notNullable();
    /** `SHA256:<unpadded base64>` of the key's wire form, as `ssh-keygen -l` prints it. */
    t.text('fingerprint').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('last_used_at', { useTz: true }).nullable();
    t.unique(['user_id', 'fingerprint']);
  });
  await knex.raw(`alter table agent_ssh_keys add constraint agent_ssh_keys_key_type check (key_type in ('ssh-ed25519', 'ssh-rsa', 'ecdsa-sha2-nistp256', 'ecdsa-sha2-nistp384', 'ecdsa-sha2-nistp521'))`);
  await knex.raw(`alter table agent_ssh_keys add constraint agent_ssh_keys_name_length check (length(name) between 1 and 100)`);
  await knex.raw(`alter table agent_ssh_keys add constraint agent_ssh_keys_fingerprint_form check (fingerprint ~ '^SHA256:[A-Za-z0-9+/]{43}$')`);
  await knex.raw('create index agent_ssh_keys_fingerprint on agent_ssh_keys (fingerprint)');
  await knex.schema.alterTable('agent_hosts', (t) => {
    /** The name owners connect to (the runner's `AGENT_SSH_PUBLIC_HOST`); null: SSH off on this host. */
    t.text('ssh_host').nullable();
    t.integer('ssh_port').nullable();
  });
  await knex.raw('alter table agent_hosts add constraint agent_hosts_ssh_port_range check (ssh_port between 1 and 65535)');
}

export async function down(knex: Knex): Promise<void> {
  const keys: unknown = await knex('agent_ssh_keys').first(knex.raw('1 as present'));
  if (keys !== undefined) {
    throw new Error(`Refusing to revert ${MIGRATION}: table agent_ssh_keys holds owners' SSH keys that would be lost. Delete them first.`);
  }
  await knex.schema.alterTable('agent_hosts', (t) => {
    t.dropColumn('ssh_host');
    t.dropColumn('ssh_port');
  });
  await knex.schema.dropTable('agent_ssh_keys');
}
