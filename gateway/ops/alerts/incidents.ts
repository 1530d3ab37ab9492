/**
 * Incidents: what the alert engine's timer makes of the drained events, one type at a time. Pure
 * apart from the times passed in, so it is unit-tested with a fake clock.
 *
 * An incident opens when the type's events within `window` reach `threshold` (a spike: failures
 * from any sources; a block: sources blocked; a breaker: circuits opened). While it is open, further
 * events of its type aggregate into it. It recovers once its condition has stayed clear for
 * `cooldown` seconds: a spike when the failures within the window are below the threshold again, a
 * block when no further source was blocked, a breaker when every circuit it saw open has closed
 * again. Suppression (snooze or mute) is decided when the incident opens and covers its recovery.
 */
import { EventKind, type AlertEvent } from './event-ring';
import { Tally } from './tally';
import { ALERT_TYPES, type AlertRules, type AlertType } from './types';

/** Why an incident posts nothing: it opened while alerts were snoozed or its type muted. */
export type Suppression = false | 'snoozed' | 'muted';

export interface Incident {
  id: string;
  type: AlertType;
  openedAt: number;
  lastEventAt: number;
  suppressed: Suppression;
  /** Events aggregated (auth failures, blocks, circuit openings). */
  events: number;
  /** Some events were lost before aggregation: every count is a floor. */
  partial: boolean;
  sources: Tally;
  addresses: Tally;
  keyPrefixes: Tally;
  reasons: Tally;
  paths: Tally;
  /** Circuits (endpoint ids) that opened, with how often. */
  endpoints: Tally;
  /** Circuits open right now. */
  openCircuits: Set<string>;
  /** Since when the condition has been clear (null: not clear). */
  clearSince: number | null;
}

export interface Transition {
  kind: 'opened' | 'recovered';
  incident: Incident;
}

/** What the failures of one source looked like (merged into a block's incident). */
interface SourceProfile {
  addresses: Tally;
  keyPrefixes: Tally;
  reasons: Tally;
  paths: Tally;
}

interface TypeState {
  /** Counted events within the window: drain time and number. */
  history: Array<{ at: number; n: number }>;
  /** Events seen while no incident is open, replayed into the next one. */
  pending: AlertEvent[];
  pendingLost: boolean;
  open: Incident | undefined;
}

const MAX_PENDING = 1000;
const MAX_PROFILES = 1000;

const typeOf: Record<EventKind, AlertType> = {
  [EventKind.AuthFailure]: 'auth_failure_spike',
  [EventKind.IpBlocked]: 'auth_ip_blocked',
  [EventKind.CircuitOpen]: 'circuit_open',
  [EventKind.CircuitClosed]: 'circuit_open',
};

function newIncident(type: AlertType, now: number, seq: number, suppressed: Suppression): Incident {
  return {
    id: `${type}-${now.toString(36)}-${seq}`, type, openedAt: now, lastEventAt: now, suppressed, events: 0, partial: false,
    sources: new Tally(), addresses: new Tally(), keyPrefixes: new Tally(), reasons: new Tally(), paths: new Tally(), endpoints: new Tally(),
    openCircuits: new Set(), clearSince: null,
  };
}

export class IncidentTracker {
  private readonly state = new Map<AlertType, TypeState>(ALERT_TYPES.map((t) => [t, { history: [], pending: [], pendingLost: false, open: undefined }]));
  private readonly profiles = new Map<string, SourceProfile>();
  private seq = 0;

  constructor(private rules: AlertRules) {}

  /** Replaces the rules (a disabled type forgets its state). */
  setRules(rules: AlertRules): void {
    this.rules = rules;
  }

  /** The open incidents, for `GET /admin/alerts`. */
  openIncidents(): Incident[] {
    return [...this.state.values()].flatMap((s) => (s.open ? [s.open] : []));
  }

  /**
   * Aggregates drained events. `lostAuthFailures` counts failures that never reached the ring
   * (overwritten): they count towards the spike, and make its distinct counts floors.
   */
  observe(events: readonly AlertEvent[], lostAuthFailures: number, now: number): void {
    // One history entry per type and drain (not per event): an attack costs the timer O(window / tick).
    const counted = new Map<AlertType, number>();
    for (const event of events) {
      if (event.kind === EventKind.AuthFailure) this.profile(event);
      const type = typeOf[event.kind];
      if (!this.rules[type].enabled) continue;
      const s = this.state.get(type)!;
      if (event.kind !== EventKind.CircuitClosed) counted.set(type, (counted.get(type) ?? 0) + 1);
      if (s.open) this.aggregate(s.open, event);
      else if (event.kind !== EventKind.CircuitClosed || s.pending.length > 0) {
        if (s.pending.length >= MAX_PENDING) {
          s.pending.shift();
          s.pendingLost = true;
        }
        s.pending.push(event);
      }
    }
    for (const [type, n] of counted) this.state.get(type)!.history.push({ at: now, n });
    if (lostAuthFailures > 0 && this.rules.auth_failure_spike.enabled) {
      const s = this.state.get('auth_failure_spike')!;
      s.history.push({ at: now, n: lostAuthFailures });
      if (s.open) {
        s.open.events += lostAuthFailures;
        s.open.partial = true;
      } else s.pendingLost = true;
    }
  }

  /** Opens and recovers incidents as of `now`; `suppression` is asked when one opens. */
  evaluate(now: number, suppression: (type: AlertType) => Suppression): Transition[] {
    const out: Transition[] = [];
    for (const type of ALERT_TYPES) {
      const rule = this.rules[type];
      const s = this.state.get(type)!;
      if (!rule.enabled) {
        Object.assign(s, { history: [], pending: [], pendingLost: false, open: undefined });
        continue;
      }
      const since = now - rule.window * 1000;
      s.history = s.history.filter((h) => h.at > since);
      const inWindow = s.history.reduce((sum, h) => sum + h.n, 0);
      if (!s.open && inWindow >= rule.threshold) {
        const incident = newIncident(type, now, (this.seq += 1), suppression(type));
        for (const event of s.pending) if (event.at > since || event.kind !== EventKind.AuthFailure) this.aggregate(incident, event);
        if (type === 'auth_failure_spike') incident.events = Math.max(incident.events, inWindow);
        incident.partial = s.pendingLost;
        Object.assign(s, { pending: [], pendingLost: false, open: incident });
        out.push({ kind: 'opened', incident });
      } else if (!s.open) {
        s.pending = s.pending.filter((e) => e.at > since);
        if (s.pending.length === 0) s.pendingLost = false;
      }
      const incident = s.open;
      if (!incident) continue;
      const clear = type === 'auth_failure_spike' ? inWindow < rule.threshold : type === 'circuit_open' ? incident.openCircuits.size === 0 : true;
      if (!clear) incident.clearSince = null;
      else incident.clearSince ??= now;
      if (incident.clearSince !== null && now - incident.clearSince >= rule.cooldown * 1000) {
        // Events of the recovered incident never count towards the next one.
        Object.assign(s, { history: [], pending: [], pendingLost: false, open: undefined });
        out.push({ kind: 'recovered', incident });
      }
    }
    return out;
  }

  private aggregate(incident: Incident, event: AlertEvent): void {
    incident.lastEventAt = Math.max(incident.lastEventAt, event.at);
    switch (event.kind) {
      case EventKind.AuthFailure:
        // a: source, b: address, c: key prefix, d: reason, e: path
        incident.events += 1;
        incident.sources.add(event.a);
        incident.addresses.add(event.b);
        incident.keyPrefixes.add(event.c);
        incident.reasons.add(event.d);
        incident.paths.add(event.e);
        return;
      case EventKind.IpBlocked: {
        // a: source, b: address
        incident.events += 1;
        incident.clearSince = null;
        incident.sources.add(event.a);
        incident.addresses.add(event.b);
        const profile = this.profiles.get(event.a);
        if (profile) {
          for (const [name, tally] of [['addresses', profile.addresses], ['keyPrefixes', profile.keyPrefixes], ['reasons', profile.reasons], ['paths', profile.paths]] as const) {
            for (const [value, n] of tally.top(Number.MAX_SAFE_INTEGER)) incident[name].add(value, n);
          }
        }
        return;
      }
      case EventKind.CircuitOpen:
        // a: endpoint id, d: reason
        incident.events += 1;
        incident.clearSince = null;
        incident.endpoints.add(event.a);
        incident.reasons.add(event.d);
        incident.openCircuits.add(event.a);
        return;
      case EventKind.CircuitClosed:
        incident.openCircuits.delete(event.a);
        return;
    }
  }

  /** Remembers what each recent failing source presented, so a block's card can name it. */
  private profile(event: AlertEvent): void {
    let p = this.profiles.get(event.a);
    if (!p) {
      if (this.profiles.size >= MAX_PROFILES) this.profiles.delete(this.profiles.keys().next().value!);
      p = { addresses: new Tally(20), keyPrefixes: new Tally(20), reasons: new Tally(20), paths: new Tally(20) };
      this.profiles.set(event.a, p);
    }
    p.addresses.add(event.b);
    p.keyPrefixes.add(event.c);
    p.reasons.add(event.d);
    p.paths.add(event.e);
  }
}
