/**
 * Reads the stored runtime state in one pass (a handful of small tables), and runs admin changes
 * in a transaction that also bumps the change marker other gateway processes poll.
 */
import type { Knex } from 'knex';
import type { Db } from '../../lib/db';
import { SETTING, type StoredState } from './types';

const OWNED_PREFIXES = [SETTING.runtimeModel, SETTING.router, SETTING.requiredRole, SETTING.offload];

/** The current change marker (0 when never bumped). Cheap: one primary-key lookup. */
export async function readRevision(db: Db | Knex.Transaction): Promise<number> {
  const row = await db('site_settings').where({ key: SETTING.revision }).first<{ value: unknown } | undefined>('value');
  return typeof row?.value === 'number' ? row.value : 0;
}

async function ownedSettings(db: Knex.Transaction): Promise<Map<string, unknown>> {
  const query = db('site_settings').select<Array<{ key: string; value: unknown }>>('key', 'value').where({ key: SETTING.routewise });
  for (const prefix of OWNED_PREFIXES) void query.orWhere('key', 'like', `${prefix.replace(/_/g, '\\_')}%`);
  return new Map((await query).map((r) => [r.key, r.value]));
}

/** Reads every stored runtime resource in one repeatable-read snapshot. */
export async function loadStoredState(db: Db): Promise<StoredState> {
  return db.transaction(async (trx) => {
    await trx.raw('set transaction isolation level repeatable read');
    // One connection: the reads run one after another inside the snapshot.
    const revision = await readRevision(trx);
    const providers = await trx('provider_definitions').select<StoredState['providers']>('slug', 'display_name', 'kind', 'base_url', 'api_key', 'api_key_fingerprint').orderBy('slug');
    const providerKeys = await trx('provider_api_keys').select<Array<Record<string, unknown>>>('*').orderBy('id');
    const disabledEnvKeys = await trx('disabled_provider_env_keys').select<StoredState['disabledEnvKeys']>('provider', 'fingerprint');
    const envKeyMinRoles = await trx('provider_env_key_min_roles').select<StoredState['envKeyMinRoles']>('provider', 'fingerprint', 'min_role');
    const disabledProviders = await trx('disabled_providers').select<StoredState['disabledProviders']>('provider', 'reason').orderBy('provider');
    const candidates = await trx('provider_route_candidates').select<Array<Record<string, unknown>>>('*').orderBy('id');
    const routeConfigs = await trx('provider_route_configs').select<StoredState['routeConfigs']>('model_id', 'route_id', 'config', 'api_key', 'api_key_fingerprint');
    const weights = await trx('provider_weight_overrides').select<StoredState['weights']>('model_id', 'endpoint_id', 'weight');
    const visibility = await trx('model_visibility_overrides').select<StoredState['visibility']>('model_id', 'required_role');
    const exemptions = await trx('model_concurrency_exemptions').pluck<string>('model_id');
    const settings = await ownedSettings(trx);
    return {
      revision, providers, disabledEnvKeys, envKeyMinRoles, disabledProviders, routeConfigs, weights, visibility, settings,
      providerKeys: providerKeys.map((r) => ({ ...r, id: String(r.id) }) as StoredState['providerKeys'][number]),
      candidates: candidates.map((r) => ({ ...r, id: String(r.id), weight: Number(r.weight) }) as StoredState['candidates'][number]),
      exemptions,
    };
  });
}

/** Stores a `site_settings` value (null deletes) inside an admin change. */
export async function writeSetting(trx: Knex.Transaction, key: string, value: unknown): Promise<void> {
  if (value === null || value === undefined) {
    await trx('site_settings').where({ key }).delete();
    return;
  }
  await trx('site_settings').insert({ key, value: JSON.stringify(value), updated_at: trx.fn.now() }).onConflict('key').merge(['value', 'updated_at']);
}

/** Runs `change` in a transaction and bumps the change marker in the same transaction. */
export async function changeStoredState<T>(db: Db, change: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
  return db.transaction(async (trx) => {
    const result = await change(trx);
    await trx.raw(
      `insert into site_settings (key, value, updated_at) values (?, '1'::jsonb, now())
       on conflict (key) do update set value = to_jsonb(coalesce((site_settings.value #>> '{}')::bigint, 0) + 1), updated_at = now()`,
      [SETTING.revision],
    );
    return result;
  });
}
