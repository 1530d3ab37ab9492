/**
 * Bounded counts of distinct values (sources, addresses, key prefixes, reasons, paths) for one
 * incident. At most `cap` distinct values are kept; a value beyond the cap is counted in `other`
 * and the distinct count becomes a floor (shown as "≥ cap"), so an attack from a million addresses
 * costs the same memory as one from fifty.
 */
export const DISTINCT_CAP = 50;

export class Tally {
  private readonly counts = new Map<string, number>();
  /** Occurrences of values that did not fit under the cap. */
  other = 0;

  constructor(private readonly cap = DISTINCT_CAP) {}

  add(value: string | undefined, n = 1): void {
    if (value === undefined || value === '') return;
    const seen = this.counts.get(value);
    if (seen !== undefined) this.counts.set(value, seen + n);
    else if (this.counts.size < this.cap) this.counts.set(value, n);
    else this.other += n;
  }

  /** Whether some distinct values were not kept: {@link distinct} is then a floor. */
  get capped(): boolean {
    return this.other > 0;
  }

  get distinct(): number {
    return this.counts.size;
  }

  /** "12", or "≥ 50" when the cap was hit. */
  distinctLabel(): string {
    return this.capped ? `≥ ${this.distinct}` : String(this.distinct);
  }

  /** The `n` most frequent values with their counts, most frequent first. */
  top(n: number): Array<[string, number]> {
    return [...this.counts].sort((x, y) => y[1] - x[1] || (x[0] < y[0] ? -1 : 1)).slice(0, n);
  }
}
