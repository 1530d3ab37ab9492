/**
 * The runtime configuration of one gateway process: reads the stored state, builds the effective
 * registry with the overlay and swaps {@link RegistryHolder.current} (never mutating a registry).
 * Applied once the database answers at startup, at once after each admin change made through this
 * process, and within {@link RuntimeConfigOptions.pollMs} after a change made by another process
 * (it polls the change marker, one primary-key read). The hot path reads only memory.
 */
import type { Knex } from 'knex';
import type { Db } from '../../lib/db';
import type { Logger } from '../../lib/logger';
import type { RegistryHolder } from '../registry/holder';
import type { Registry } from '../registry/types';
import { buildEffectiveConfig, type EffectiveConfig, type RouteInfo } from './overlay';
import { changeStoredState, loadStoredState, readRevision } from './store';
import { emptyStoredState, type StoredState } from './types';

export interface RuntimeConfigOptions {
  db: Db | null;
  holder: RegistryHolder;
  log: Logger;
  /** How often other processes' changes are looked for (default 2000 ms). */
  pollMs?: number;
}

export class RuntimeConfig {
  /** The registry loaded from files (the overlay's base). */
  readonly base: Registry;
  private effectiveConfig: EffectiveConfig;
  private stored: StoredState = emptyStoredState();
  private timer: NodeJS.Timeout | undefined;
  private loggedWeights = new Map<string, number>();
  private loggedProblems = new Set<string>();
  private reloading: Promise<void> | undefined;
  private loaded = false;

  constructor(private readonly options: RuntimeConfigOptions) {
    this.base = options.holder.current;
    this.effectiveConfig = buildEffectiveConfig(this.base, this.stored, () => undefined);
  }

  /** The effective configuration now applied. */
  get effective(): EffectiveConfig {
    return this.effectiveConfig;
  }

  /** The stored state the effective configuration was built from. */
  get state(): StoredState {
    return this.stored;
  }

  /** Whether a model is exempt from the per-user concurrency limit (memory only; hot-path safe). */
  isConcurrencyExempt(modelId: string): boolean {
    return this.effectiveConfig.exemptions.has(modelId);
  }

  /** Reads the stored state and applies it (concurrent calls share one read). */
  async reload(): Promise<void> {
    this.reloading ??= this.readAndApply().finally(() => {
      this.reloading = undefined;
    });
    return this.reloading;
  }

  private async readAndApply(): Promise<void> {
    if (!this.options.db) return;
    this.apply(await loadStoredState(this.options.db));
    this.loaded = true;
  }

  /** Builds and swaps in the effective registry for `state`. */
  apply(state: StoredState): void {
    const { log } = this.options;
    // Each problem is logged when it first appears, not again on every later reload.
    const problems = new Set<string>();
    const effective = buildEffectiveConfig(this.base, state, (message, fields) => {
      problems.add(message);
      if (!this.loggedProblems.has(message)) log.warn({ event: 'saved_setting_not_applied', ...fields }, message);
    });
    this.loggedProblems = problems;
    this.stored = state;
    this.effectiveConfig = effective;
    this.options.holder.current = effective.registry;
    this.logWeightOverrides(effective.routes);
  }

  /** `route_weight_zeroed` / `route_weight_overridden` once per new or changed override. */
  private logWeightOverrides(routes: ReadonlyMap<string, RouteInfo>): void {
    const seen = new Map<string, number>();
    for (const info of routes.values()) {
      if (info.overrideWeight === undefined) continue;
      const key = `${info.modelId}\n${info.endpointId}`;
      seen.set(key, info.effectiveWeight);
      if (this.loggedWeights.get(key) === info.effectiveWeight) continue;
      const fields = { model: info.modelId, endpoint_id: info.endpointId, route_id: info.routeId, configured_weight: info.configuredWeight, override_weight: info.overrideWeight, effective_weight: info.effectiveWeight };
      if (info.effectiveWeight === 0) this.options.log.warn({ event: 'route_weight_zeroed', ...fields }, `route_weight_zeroed: ${info.endpointId} of ${info.modelId} now has weight 0 and is never used`);
      else this.options.log.info({ event: 'route_weight_overridden', ...fields }, `route_weight_overridden: ${info.endpointId} of ${info.modelId} weight ${info.configuredWeight} -> ${info.effectiveWeight}`);
    }
    this.loggedWeights = seen;
  }

  /** Runs an admin change (in a transaction that bumps the change marker), then applies it here. */
  async change<T>(db: Db, change: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
    const result = await changeStoredState(db, change);
    // A read that started before the commit may have missed it: wait for it, then read again.
    await this.reloading?.catch(() => undefined);
    await this.reload();
    return result;
  }

  /** Reloads when the change marker moved (or nothing was applied yet): what the poll runs. */
  async reloadIfChanged(): Promise<void> {
    const { db } = this.options;
    if (!db) return;
    if (!this.loaded || (await readRevision(db)) !== this.stored.revision) await this.reload();
  }

  /** Starts polling the change marker, then applies the stored state now (throws when it cannot be read; the poll retries). */
  async start(): Promise<void> {
    if (!this.options.db || this.timer) return;
    const tick = async () => {
      try {
        await this.reloadIfChanged();
      } catch (err) {
        this.options.log.warn({ err }, 'runtime configuration refresh failed; keeping the applied state');
      }
    };
    this.timer = setInterval(() => void tick(), this.options.pollMs ?? 2000);
    this.timer.unref();
    await this.reload();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }
}
