/**
 * Snooze (every alert, up to 7 days) and per-type mutes (1 hour, 1 day, 1 week or until
 * unmuted), stored as runtime settings (`site_settings` rows `alerts_snooze` and
 * `alerts_mute:<type>`), so every gateway process sees a change at its next settings sync (at
 * most 5 s) and a restart keeps it. Expired values are simply ignored. An incident that opens
 * while snoozed or muted posts nothing, not even its recovery; nothing is queued for later.
 */
import type { Suppression } from './incidents';
import { ALERT_TYPES, type AlertType } from './types';

export const MAX_SNOOZE_SECONDS = 7 * 24 * 3600;

/** The mute durations offered, in seconds (`until_unmuted`: no end). */
export const MUTE_DURATIONS = { '1h': 3600, '1d': 86_400, '1w': 604_800, until_unmuted: null } as const;
export type MuteDuration = keyof typeof MUTE_DURATIONS;

export const SNOOZE_KEY = 'alerts_snooze';
export const muteKey = (type: AlertType): string => `alerts_mute:${type}`;

/** The part of the runtime settings the controls use. */
export interface SettingsStore {
  get(key: string): unknown;
  write(key: string, value: unknown): Promise<void>;
}

interface StoredSnooze { until: string; set_at: string }
interface StoredMute { until: string | null; duration: MuteDuration; set_at: string }

export interface MuteView { type: AlertType; muted: boolean; duration: MuteDuration | null; until: string | null; set_at: string | null }
export interface ControlsView {
  snooze: { active: boolean; until: string | null; set_at: string | null };
  mutes: MuteView[];
}

function isStoredSnooze(v: unknown): v is StoredSnooze {
  return typeof v === 'object' && v !== null && typeof (v as StoredSnooze).until === 'string';
}

function isStoredMute(v: unknown): v is StoredMute {
  return typeof v === 'object' && v !== null && 'until' in v && ((v as StoredMute).until === null || typeof (v as StoredMute).until === 'string');
}

export class AlertControls {
  constructor(private readonly settings: SettingsStore, private readonly now: () => number = Date.now) {}

  /** Until when every alert is snoozed (ms), or null. */
  snoozedUntil(): number | null {
    const v = this.settings.get(SNOOZE_KEY);
    if (!isStoredSnooze(v)) return null;
    const until = Date.parse(v.until);
    return until > this.now() ? until : null;
  }

  /** The active mute of `type`, or null. */
  activeMute(type: AlertType): StoredMute | null {
    const v = this.settings.get(muteKey(type));
    if (!isStoredMute(v)) return null;
    return v.until === null || Date.parse(v.until) > this.now() ? v : null;
  }

  /** Whether an incident of `type` opening now is suppressed, and why. */
  suppression(type: AlertType): Suppression {
    if (this.activeMute(type)) return 'muted';
    if (this.snoozedUntil() !== null) return 'snoozed';
    return false;
  }

  async snooze(seconds: number): Promise<void> {
    const now = this.now();
    await this.settings.write(SNOOZE_KEY, { until: new Date(now + seconds * 1000).toISOString(), set_at: new Date(now).toISOString() });
  }

  async endSnooze(): Promise<void> {
    await this.settings.write(SNOOZE_KEY, null);
  }

  async mute(type: AlertType, duration: MuteDuration): Promise<void> {
    const now = this.now();
    const seconds = MUTE_DURATIONS[duration];
    await this.settings.write(muteKey(type), { until: seconds === null ? null : new Date(now + seconds * 1000).toISOString(), duration, set_at: new Date(now).toISOString() });
  }

  async unmute(type: AlertType): Promise<void> {
    await this.settings.write(muteKey(type), null);
  }

  view(): ControlsView {
    const until = this.snoozedUntil();
    const snooze = this.settings.get(SNOOZE_KEY);
    return {
      snooze: { active: until !== null, until: until === null ? null : new Date(until).toISOString(), set_at: until !== null && isStoredSnooze(snooze) ? snooze.set_at : null },
      mutes: ALERT_TYPES.map((type) => {
        const m = this.activeMute(type);
        return { type, muted: m !== null, duration: m?.duration ?? null, until: m?.until ?? null, set_at: m?.set_at ?? null };
      }),
    };
  }
}
