/**
 * The host runner's heartbeat (docs/agent-hosts.md): reports `slots_total`, runtime, runner version and
 * attestations with the host's own credential, and applies the operator's saved slots from the
 * answer (`slots_configured`) by reporting them from the next beat (runner version 2). The call is
 * the contract `hostHeartbeat` of lib/contracts/host-api.ts, made through the internal JSON client.
 */
import type { ResponseOf } from '../lib/contracts/endpoint';
import * as hostApi from '../lib/contracts/host-api';
import { InternalCallError, InternalClient } from '../lib/http/internal-client';
import type { Logger } from '../lib/logger';
import type { Preflight } from '../activities/docker/runtime-preflight';

/** Version 2 applies remote slot changes; version 1 runners ignore `slots_configured`. */
export const RUNNER_VERSION = '2';

/** The most slots an operator may save for a host. */
export const MAX_HOST_SLOTS = hostApi.MAX_HOST_SLOTS;

/** A beat is small; one that has not arrived in 5 s is worth less than the next one. */
export const HEARTBEAT_TIMEOUT_MS = 5000;

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
  /** What the host attests now and the preflight behind it (read at each beat); absent: `container` only. */
  attestation?: () => { capabilities: string[]; preflight?: Preflight };
  /** Where owners reach this host's SSH server (docs/ssh.md); absent when it is off. */
  ssh?: { host: string; port: number };
  /** Replaceable for tests; the global fetch by default. */
  fetch?: typeof fetch;
}

/** The API's answer to a beat. */
export type HeartbeatAnswer = ResponseOf<typeof hostApi.hostHeartbeat>;

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
  const http = new InternalClient({
    service: 'control-plane API', baseUrl: options.apiUrl, token: options.credential, timeoutMs: HEARTBEAT_TIMEOUT_MS, fetch: options.fetch,
  });
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
      const answer = await http.call(hostApi.hostHeartbeat, {
        params: { hostId: options.hostId },
        body: { slots_total: reported, runtime: options.runtime, runner_version: RUNNER_VERSION, ...(options.attestation?.() ?? { capabilities: ['container'] }), ...(options.ssh ? { ssh: options.ssh } : {}) },
      });
      log.debug(answer, 'host heartbeat');
      apply(answer);
      return { ok: true, slotsTotal: reported, answer };
    } catch (err) {
      if (err instanceof InternalCallError && err.failure === 'status') {
        log.warn({ status: err.status }, 'host heartbeat refused');
        return { ok: false, slotsTotal: reported, status: err.status };
      }
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
