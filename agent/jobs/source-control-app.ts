/**
 * The deployment's source-control app (docs/source-control.md): when one is configured
 * (`AGENT_SOURCE_CONTROL_APP_ID` + `AGENT_SOURCE_CONTROL_APP_PRIVATE_KEY_PATH`), creating a job on
 * a repository needs it loaded, and answers 503 while it cannot be (missing or unreadable key).
 * A loaded app is kept; a failed load is retried at most every 10 s. Jobs without a repository
 * never need it. (Repository tokens minted with it come with the source-control issue.)
 */
import { createPrivateKey, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { AppError } from '../../lib/errors';
import type { Logger } from '../../lib/logger';
import type { Settings } from '../../lib/settings';

const RETRY_MS = 10_000;

export type SourceControlState =
  | { state: 'not_configured' }
  | { state: 'loaded'; appId: string; key: KeyObject }
  | { state: 'unavailable'; reason: string };

export class SourceControlApp {
  private loaded: SourceControlState | undefined;
  private lastFailureAt = 0;

  constructor(
    private readonly settings: Pick<Settings, 'AGENT_SOURCE_CONTROL_APP_ID' | 'AGENT_SOURCE_CONTROL_APP_PRIVATE_KEY_PATH'>,
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  /** The app's state, loading it when configured and not loaded yet. */
  current(): SourceControlState {
    const { AGENT_SOURCE_CONTROL_APP_ID: appId, AGENT_SOURCE_CONTROL_APP_PRIVATE_KEY_PATH: keyPath } = this.settings;
    if (!appId && !keyPath) return { state: 'not_configured' };
    if (this.loaded?.state === 'loaded') return this.loaded;
    if (this.loaded && this.now() - this.lastFailureAt < RETRY_MS) return this.loaded;
    try {
      if (!appId || !keyPath) throw new Error('both AGENT_SOURCE_CONTROL_APP_ID and AGENT_SOURCE_CONTROL_APP_PRIVATE_KEY_PATH are needed');
      this.loaded = { state: 'loaded', appId, key: createPrivateKey(readFileSync(keyPath)) };
      this.log.info({ event: 'agent_source_control_app_loaded', app_id: appId }, 'source-control app loaded');
    } catch (err) {
      const reason = (err as NodeJS.ErrnoException).code ?? (err as Error).message.split('\n')[0] ?? 'unknown error';
      this.loaded = { state: 'unavailable', reason };
      this.lastFailureAt = this.now();
      this.log.warn({ event: 'agent_source_control_app_unavailable', reason }, 'source-control app is configured but cannot be loaded');
    }
    return this.loaded;
  }

  /** Throws 503 while a configured app cannot be loaded. */
  assertAvailable(): void {
    if (this.current().state === 'unavailable') {
      throw new AppError('service_unavailable', 'The source-control app is configured but cannot be loaded; try again later');
    }
  }
}
