/**
 * The only part of the alert engine the request path touches: a fixed-size ring of event slots,
 * allocated once. {@link EventRing.push} stores a kind, a time and references to strings the
 * caller already holds (it builds nothing), so it is O(1) and allocation-free; the engine's timer
 * drains the ring off the request path. When producers outrun the timer the oldest slots are
 * overwritten and counted in {@link EventRing.overwritten}, and cards then show their counts as
 * floors.
 */

/** What happened (the slot's `kind`). */
export const EventKind = { AuthFailure: 1, IpBlocked: 2, CircuitOpen: 3, CircuitClosed: 4 } as const;
export type EventKind = (typeof EventKind)[keyof typeof EventKind];

/** One drained event; the meaning of `a`…`e` depends on the kind (see the engine's push methods). */
export interface AlertEvent {
  kind: EventKind;
  at: number;
  a: string;
  b: string | undefined;
  c: string | undefined;
  d: string | undefined;
  e: string | undefined;
}

export class EventRing {
  private readonly kinds: Uint8Array;
  private readonly times: Float64Array;
  private readonly as: Array<string>;
  private readonly bs: Array<string | undefined>;
  private readonly cs: Array<string | undefined>;
  private readonly ds: Array<string | undefined>;
  private readonly es: Array<string | undefined>;
  /** Next slot to write. */
  private head = 0;
  /** Slots holding undrained events. */
  private size = 0;
  /** Events lost to overwriting since the last drain. */
  overwritten = 0;

  constructor(readonly capacity: number) {
    this.kinds = new Uint8Array(capacity);
    this.times = new Float64Array(capacity);
    this.as = new Array<string>(capacity).fill('');
    this.bs = new Array<string | undefined>(capacity).fill(undefined);
    this.cs = new Array<string | undefined>(capacity).fill(undefined);
    this.ds = new Array<string | undefined>(capacity).fill(undefined);
    this.es = new Array<string | undefined>(capacity).fill(undefined);
  }

  /** Stores one event (O(1), no allocation); overwrites the oldest when full. */
  push(kind: EventKind, at: number, a: string, b?: string, c?: string, d?: string, e?: string): void {
    const i = this.head;
    this.kinds[i] = kind;
    this.times[i] = at;
    this.as[i] = a;
    this.bs[i] = b;
    this.cs[i] = c;
    this.ds[i] = d;
    this.es[i] = e;
    this.head = i + 1 === this.capacity ? 0 : i + 1;
    if (this.size === this.capacity) this.overwritten += 1;
    else this.size += 1;
  }

  /** Takes every stored event, oldest first, and the count lost since the last drain. */
  drain(): { events: AlertEvent[]; lost: number } {
    const events: AlertEvent[] = [];
    let i = (this.head - this.size + this.capacity) % this.capacity;
    for (let n = 0; n < this.size; n += 1) {
      events.push({ kind: this.kinds[i] as EventKind, at: this.times[i]!, a: this.as[i]!, b: this.bs[i], c: this.cs[i], d: this.ds[i], e: this.es[i] });
      this.bs[i] = this.cs[i] = this.ds[i] = this.es[i] = undefined;
      i = i + 1 === this.capacity ? 0 : i + 1;
    }
    const lost = this.overwritten;
    this.size = 0;
    this.overwritten = 0;
    return { events, lost };
  }
}
