/**
 * IP address and CIDR primitives for client address resolution (docs/client-address.md). Pure: no I/O, no
 * mutable module state.
 *
 * Every address is held as eight 16-bit words (a `Uint16Array(8)`, the IPv6 layout). An IPv4
 * address is stored in its IPv4-mapped form `::ffff:a.b.c.d`, so an IPv4 peer, an IPv4-mapped
 * IPv6 peer (`::ffff:10.0.0.1`, as dual-stack Node sockets report them) and an IPv4 CIDR all
 * meet in one representation. Parsing is a hand-written scanner over char codes (no regex, no
 * substring allocation) that accepts exactly what `net.isIP` accepts; the unit tests check that
 * differentially.
 */

/** Syntactic family returned by the parsers: 0 = not an address, 4 = dotted quad, 6 = IPv6 text. */
export type IpFamily = 0 | 4 | 6;

/** Eight 16-bit words; IPv4 is stored IPv4-mapped (`::ffff:a.b.c.d`). */
export type IpWords = Uint16Array;

/** A fresh scratch buffer for the parsers. */
export function newIpWords(): IpWords {
  return new Uint16Array(8);
}

const COLON = 58;
const DOT = 46;
const PERCENT = 37;

function hexValue(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 97 && c <= 102) return c - 87;
  if (c >= 65 && c <= 70) return c - 55;
  return -1;
}

/**
 * Parses the dotted quad in `s[start, end)` into `out[index]` (high 16 bits) and `out[index + 1]`.
 * Strict like `net.isIP`: exactly four decimal parts of 1-3 digits, each 0-255, no leading
 * zeros. Integer-only arithmetic (no boxed doubles on the hot path).
 */
function parseIpv4Into(s: string, start: number, end: number, out: IpWords, index: number): boolean {
  let hi = 0;
  let part = 0;
  let value = 0;
  let digits = 0;
  for (let i = start; i < end; i += 1) {
    const c = s.charCodeAt(i);
    if (c >= 48 && c <= 57) {
      if (digits > 0 && value === 0) return false; // leading zero
      value = value * 10 + (c - 48);
      digits += 1;
      if (value > 255) return false;
    } else if (c === DOT) {
      if (digits === 0 || part === 3) return false;
      if (part === 0) hi = value << 8;
      else if (part === 1) hi |= value;
      else out[index + 1] = value << 8;
      part += 1;
      value = 0;
      digits = 0;
    } else {
      return false;
    }
  }
  if (digits === 0 || part !== 3) return false;
  out[index] = hi;
  out[index + 1] = out[index + 1]! | value;
  return true;
}

/** Parses a dotted quad in `s[start, end)` into `out` in IPv4-mapped form. */
export function parseIpv4(s: string, start: number, end: number, out: IpWords): boolean {
  if (!parseIpv4Into(s, start, end, out, 6)) return false;
  out[0] = 0; out[1] = 0; out[2] = 0; out[3] = 0; out[4] = 0;
  out[5] = 0xffff;
  return true;
}

/** Parses IPv6 text in `s[start, end)` into `out`; an optional `%zone` suffix only when allowed. */
function parseV6(s: string, start: number, end: number, out: IpWords, allowZone: boolean): boolean {
  let stop = end;
  if (allowZone) {
    const pct = s.indexOf('%', start);
    if (pct >= 0 && pct < end) {
      if (pct === end - 1) return false;
      for (let i = pct + 1; i < end; i += 1) {
        const c = s.charCodeAt(i);
        if (c <= 0x20 || c >= 0x7f || c === PERCENT) return false;
      }
      stop = pct;
    }
  }
  if (stop - start < 2) return false;
  let i = start;
  let n = 0;
  let gap = -1; // word index where "::" stands
  if (s.charCodeAt(i) === COLON) {
    if (s.charCodeAt(i + 1) !== COLON) return false;
    i += 2;
    gap = 0;
    if (i === stop) {
      out.fill(0);
      return true;
    }
  }
  for (;;) {
    if (n === 8) return false;
    const groupStart = i;
    let value = 0;
    while (i < stop) {
      const h = hexValue(s.charCodeAt(i));
      if (h < 0) break;
      value = value * 16 + h;
      i += 1;
      if (i - groupStart > 4) return false;
    }
    if (i < stop && s.charCodeAt(i) === DOT) {
      // Trailing dotted quad: occupies the last two words and must end the text.
      if (n > 6 || !parseIpv4Into(s, groupStart, stop, out, n)) return false;
      n += 2;
      break;
    }
    if (i === groupStart) return false;
    out[n] = value;
    n += 1;
    if (i === stop) break;
    if (s.charCodeAt(i) !== COLON) return false;
    i += 1;
    if (i === stop) return false; // a single trailing colon
    if (s.charCodeAt(i) === COLON) {
      if (gap >= 0) return false; // a second "::"
      gap = n;
      i += 1;
      if (i === stop) break;
    }
  }
  if (gap < 0) return n === 8;
  if (n === 8) return false; // "::" must stand for at least one zero word (as net.isIP)
  const tail = n - gap;
  for (let k = 1; k <= tail; k += 1) out[8 - k] = out[n - k]!;
  for (let k = gap; k < 8 - tail; k += 1) out[k] = 0;
  return true;
}

/**
 * Parses an address in `s[start, end)` into `out` (IPv4 stored mapped). Returns the syntactic
 * family, or 0 when the text is not exactly one address. No whitespace, brackets or ports;
 * a `%zone` suffix on IPv6 only when `allowZone` (socket peers).
 */
export function parseIpInto(s: string, start: number, end: number, out: IpWords, allowZone = false): IpFamily {
  if (end - start < 2 || end - start > 64) {
    // The longest IPv6 text is 45 characters; leave room for a zone id.
    return 0;
  }
  let hasColon = false;
  for (let i = start; i < end; i += 1) {
    if (s.charCodeAt(i) === COLON) {
      hasColon = true;
      break;
    }
  }
  if (!hasColon) {
    return parseIpv4(s, start, end, out) ? 4 : 0;
  }
  return parseV6(s, start, end, out, allowZone) ? 6 : 0;
}

/** Whether the words are an IPv4 address (dotted quad or IPv4-mapped IPv6, `::ffff:0:0/96`). */
export function isV4(w: IpWords): boolean {
  return w[0] === 0 && w[1] === 0 && w[2] === 0 && w[3] === 0 && w[4] === 0 && w[5] === 0xffff;
}

/** The embedded IPv4 address as a signed 32-bit integer (meaningful when {@link isV4}). */
function v4Int32(w: IpWords): number {
  return (w[6]! << 16) | w[7]!;
}

function formatV4(w: IpWords): string {
  const hi = w[6]!;
  const lo = w[7]!;
  return `${hi >>> 8}.${hi & 0xff}.${lo >>> 8}.${lo & 0xff}`;
}

function formatV6(w: IpWords): string {
  // RFC 5952: lower-case hex, no leading zeros, the longest run (>= 2) of zero words as "::"
  // (the first such run on a tie).
  let bestStart = -1;
  let bestLength = 1;
  let runStart = -1;
  for (let i = 0; i < 8; i += 1) {
    if (w[i] === 0) {
      if (runStart < 0) runStart = i;
      if (i - runStart + 1 > bestLength) {
        bestStart = runStart;
        bestLength = i - runStart + 1;
      }
    } else {
      runStart = -1;
    }
  }
  let text = '';
  let afterGap = false;
  for (let i = 0; i < 8; i += 1) {
    if (i === bestStart) {
      text += '::';
      i += bestLength - 1;
      afterGap = true;
      continue;
    }
    if (i > 0 && !afterGap) text += ':';
    afterGap = false;
    text += w[i]!.toString(16);
  }
  return text;
}

/**
 * Canonical text: IPv4 and IPv4-mapped IPv6 as a dotted quad, other IPv6 in RFC 5952 form
 * (embedded IPv4 of non-mapped forms printed as hex). A zone id is not kept.
 */
export function formatIp(w: IpWords): string {
  return isV4(w) ? formatV4(w) : formatV6(w);
}

/** Canonical text of the /64 network of an IPv6 address, with its `/64` suffix. */
export function formatIpv6Slash64(w: IpWords): string {
  const net = new Uint16Array(8);
  net[0] = w[0]!; net[1] = w[1]!; net[2] = w[2]!; net[3] = w[3]!;
  return `${formatV6(net)}/64`;
}

// ---------------------------------------------------------------------------------------------
// CIDR sets

/** Why a CIDR text was refused (for a startup error). */
export class CidrSyntaxError extends Error {
  constructor(readonly entry: string, readonly problem: string) {
    super(`${JSON.stringify(entry)} ${problem}`);
    this.name = 'CidrSyntaxError';
  }
}

/** One parsed network: words of the network address (IPv4 stored mapped) and a 0-128 prefix. */
export interface Cidr {
  readonly words: IpWords;
  readonly prefix: number;
  /** Canonical text, e.g. `10.0.0.0/8` or `2001:db8::/32`. */
  readonly text: string;
}

function parsePrefix(text: string, start: number, max: number): number {
  const length = text.length - start;
  if (length < 1 || length > 3) return -1;
  let value = 0;
  for (let i = start; i < text.length; i += 1) {
    const c = text.charCodeAt(i);
    if (c < 48 || c > 57) return -1;
    if (i > start && value === 0) return -1; // leading zero
    value = value * 10 + (c - 48);
  }
  return value <= max ? value : -1;
}

function hostBitsClear(w: IpWords, prefix: number): boolean {
  for (let bit = prefix; bit < 128; bit += 1) {
    if ((w[bit >>> 4]! >>> (15 - (bit & 15))) & 1) return false;
  }
  return true;
}

function mask(w: IpWords, prefix: number): IpWords {
  const out = new Uint16Array(8);
  for (let i = 0; i < 8; i += 1) {
    const keep = prefix - i * 16;
    if (keep >= 16) out[i] = w[i]!;
    else if (keep > 0) out[i] = w[i]! & (0xffff << (16 - keep)) & 0xffff;
  }
  return out;
}

/**
 * Parses `a.b.c.d/n` (n 0-32) or `x:y::/n` (n 0-128); a bare address is a host route (/32 or
 * /128). Surrounding whitespace is trimmed. Refused: anything else, a zone id, a prefix with a
 * sign or leading zero, and host bits set beyond the prefix (`10.0.0.1/8`), which usually
 * hides a typo: the message suggests the network address.
 */
export function parseCidr(entry: string): Cidr {
  const text = entry.trim();
  if (text === '') throw new CidrSyntaxError(entry, 'is empty');
  const slash = text.indexOf('/');
  const addressEnd = slash < 0 ? text.length : slash;
  const words = newIpWords();
  const family = parseIpInto(text, 0, addressEnd, words, false);
  if (family === 0) throw new CidrSyntaxError(entry, 'is not an IPv4 or IPv6 address or CIDR');
  const max = family === 4 ? 32 : 128;
  let prefix = max;
  if (slash >= 0) {
    prefix = parsePrefix(text, slash + 1, max);
    if (prefix < 0) throw new CidrSyntaxError(entry, `has an invalid prefix length (expected 0-${max})`);
  }
  const prefix128 = family === 4 ? prefix + 96 : prefix;
  if (!hostBitsClear(words, prefix128)) {
    const net = mask(words, prefix128);
    const suggestion = `${family === 4 ? formatV4(net) : formatV6(net)}/${prefix}`;
    throw new CidrSyntaxError(entry, `has host bits set beyond /${prefix} (did you mean ${suggestion}?)`);
  }
  const canonical = family === 4 ? formatV4(words) : formatV6(words);
  return Object.freeze({ words, prefix: prefix128, text: `${canonical}/${prefix}` });
}

function contains(net: IpWords, prefix: number, w: IpWords): boolean {
  const full = prefix >>> 4;
  for (let i = 0; i < full; i += 1) if (w[i] !== net[i]) return false;
  const rest = prefix & 15;
  if (rest === 0) return true;
  return ((w[full]! & (0xffff << (16 - rest))) & 0xffff) === net[full];
}

const MAPPED_SPACE = (() => {
  const w = newIpWords();
  w[5] = 0xffff;
  return w;
})();

/**
 * A precompiled, immutable set of networks. IPv4 networks (including IPv6 networks inside
 * `::ffff:0:0/96`) become 32-bit (network, mask) pairs checked only for IPv4/IPv4-mapped
 * addresses; the other IPv6 networks are checked word by word only for non-mapped addresses.
 * An IPv6 network that contains the whole mapped space (e.g. `::/0`, `::/64`) matches every
 * IPv4 address too.
 */
export class CidrSet {
  readonly networks: readonly Cidr[];
  private readonly v4Nets: Int32Array;
  private readonly v4Masks: Int32Array;
  private readonly v6Nets: Uint16Array;
  private readonly v6Prefixes: Uint8Array;

  constructor(networks: readonly Cidr[]) {
    this.networks = Object.freeze([...networks]);
    const v4Nets: number[] = [];
    const v4Masks: number[] = [];
    const v6: Cidr[] = [];
    for (const cidr of networks) {
      if (cidr.prefix >= 96 && isV4(cidr.words)) {
        const bits = cidr.prefix - 96;
        v4Nets.push(v4Int32(cidr.words));
        v4Masks.push(bits === 0 ? 0 : -1 << (32 - bits));
        continue;
      }
      v6.push(cidr);
      if (contains(cidr.words, cidr.prefix, MAPPED_SPACE)) {
        v4Nets.push(0);
        v4Masks.push(0);
      }
    }
    this.v4Nets = Int32Array.from(v4Nets);
    this.v4Masks = Int32Array.from(v4Masks);
    this.v6Nets = new Uint16Array(v6.length * 8);
    this.v6Prefixes = new Uint8Array(v6.length);
    v6.forEach((cidr, k) => {
      this.v6Nets.set(cidr.words, k * 8);
      this.v6Prefixes[k] = cidr.prefix;
    });
    Object.freeze(this);
  }

  /** Parses each entry with {@link parseCidr} (throws {@link CidrSyntaxError} on the first bad one). */
  static parse(entries: readonly string[]): CidrSet {
    return new CidrSet(entries.map(parseCidr));
  }

  /** Merges sets (a union; no deduplication). */
  static union(...sets: readonly CidrSet[]): CidrSet {
    return new CidrSet(sets.flatMap((s) => s.networks));
  }

  get size(): number {
    return this.networks.length;
  }

  /** Whether the parsed address lies in one of the networks. */
  has(w: IpWords): boolean {
    if (isV4(w)) {
      const value = v4Int32(w);
      const nets = this.v4Nets;
      const masks = this.v4Masks;
      for (let k = 0; k < nets.length; k += 1) {
        if ((value & masks[k]!) === nets[k]) return true;
      }
      return false;
    }
    const nets = this.v6Nets;
    const prefixes = this.v6Prefixes;
    for (let k = 0; k < prefixes.length; k += 1) {
      const base = k * 8;
      const prefix = prefixes[k]!;
      const full = prefix >>> 4;
      let i = 0;
      while (i < full && w[i] === nets[base + i]) i += 1;
      if (i < full) continue;
      const rest = prefix & 15;
      if (rest === 0 || ((w[full]! & (0xffff << (16 - rest))) & 0xffff) === nets[base + full]) return true;
    }
    return false;
  }
}
