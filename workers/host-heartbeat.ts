/**
 * The host runner's heartbeat (spec 3.5, 5.5): reports `slots_total`, runtime, runner version and
 * attestations with the host's own credential, and applies the operator's saved slots from the
 * answer (`slots_configured`) by reporting them from the next beat (runner version 2).
 */
import type { Logger } from '../lib/logger';

/** Version 2 applies remote slot changes; version 1 runners ignore `slots_configured`. */
export const RUNNER_VERSION = '2';

/** The most slots an operator may save for a host (spec 8). */
export const MAX_HOST_SLOTS = 128;

export interface HeartbeatOptions {
  /** The control-plane API's base URL (`AGENT_API_URL`). */
  apiUrl: string;
  hostId: string;
  /** The enrollment-issued host credential (never logged). */
  credential: string;
  /** `AGENT_HOST_SLOTS`: reported while the operator has saved nothing (host default). */
  defaultSlots: number;
  /** e.g. `docker-27.1.1`. */
  runtime: string;
  log: Logger;
  capabilities?: string[];
  /** Replaceable for tests; the global fetch by default. */
  fetch?: typeof fetch;
}

/** The API's answer to a beat. */
export interface HeartbeatAnswer {
  host_id: string;
  slots_configured: number | null;
  slots_effective: number;
}

export type BeatResult = { ok: true; slotsTotal: number; answer: HeartbeatAnswer } | { ok: false; slotsTotal: number; status?: number; error?: string };

export interface Heartbeat {
  /** Sends one beat; never throws (a refused or failed beat is logged and reported). */
  beatOnce(): Promise<BeatResult>;
  /** The `slots_total` the next beat reports. */
  slotsTotal(): number;
  /** Starts beating now and every `intervalMs`. */
  start(intervalMs: number): void;
  /** Stops the timer (a beat in flight completes). */
  stop(): void;
}

/** A heartbeat loop for one host; `start` it, or drive `beatOnce` directly in tests. */
export function createHeartbeat(options: HeartbeatOptions): Heartbeat {
  const { log, defaultSlots } = options;
  const doFetch = options.fetch ?? fetch;
  const url = new URL(`/v1/agent/hosts/${encodeURIComponent(options.hostId)}/heartbeat`, options.apiUrl);
  let slotsTotal = defaultSlots;
  let timer: NodeJS.Timeout | undefined;

  const apply = (answer: HeartbeatAnswer): void => {
    const wanted = answer.slots_configured ?? defaultSlots;
    if (wanted === slotsTotal) return;
    log.info({ event: 'agent_host_slots_applied', host_id: options.hostId, slots_previous: slotsTotal, slots_total: wanted, slots_configured: answer.slots_configured }, 'host slots changed by the operator');
    slotsTotal = wanted;
  };

  const beatOnce = async (): Promise<BeatResult> => {
    const reported = slotsTotal;
    try {
      const res = await doFetch(url, {
        method: 'POST',
        headers: { authorization: `Bearer ${options.credential}`, 'content-type': 'application/json' },
        body: JSON.stringify({ slots_total: reported, runtime: options.runtime, runner_version: RUNNER_VERSION, capabilities: options.capabilities ?? ['container'] }),
        signal: AbortSignal.timeout(5000),
      });
      if (!res.ok) {
        log.warn({ status: res.status }, 'host heartbeat refused');
        return { ok: false, slotsTotal: reported, status: res.status };
      }
      const answer = (await res.json()) as HeartbeatAnswer;
      log.debug(answer, 'host heartbeat');
      apply(answer);
      return { ok: true, slotsTotal: reported, answer };
    } catch (err) {
      log.warn({ err: (err as Error).message }, 'host heartbeat failed');
      return { ok: false, slotsTotal: reported, error: (err as Error).message };
    }
  };

  return {
    beatOnce,
    slotsTotal: () => slotsTotal,
    start(intervalMs) {
      if (timer) return;
      void beatOnce();
      timer = setInterval(() => void beatOnce(), intervalMs);
    },
    stop() {
      if (timer) clearInterval(timer);
      timer = undefined;
    },
  };
}
