/**
 * Round-robin rotation over one endpoint's `api_keys`.
 */

/** Hands out the keys of a pool in turn; `next()` is `undefined` for an empty pool. */
export class KeyPool {
  private readonly keys: readonly string[];
  private cursor = 0;

  /** Empty strings are ignored; the array is copied. */
  constructor(keys: readonly string[]) {
    this.keys = keys.filter((key) => key !== '');
  }

  /** How many keys the pool rotates over. */
  get size(): number {
    return this.keys.length;
  }

  /** The next key in round-robin order. */
  next(): string | undefined {
    if (this.keys.length === 0) return undefined;
    const key = this.keys[this.cursor];
    this.cursor = (this.cursor + 1) % this.keys.length;
    return key;
  }
}
