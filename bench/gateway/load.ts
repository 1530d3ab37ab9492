/**
 * Load generation, run in the benchmark runner's process (pinned to core 0 with the upstream):
 * exact c=1 latency loops timed with `process.hrtime.bigint()` over one keep-alive undici
 * connection, autocannon for non-streaming requests/s, and an undici pool for streams/s that
 * counts only streams received whole (ending in `data: [DONE]`).
 */
import autocannon from 'autocannon';
import { Client, Pool } from 'undici';
import { cpuSnapshot, cpuUse, type CpuUse } from './cpu';

/** Where and how to send chat completion requests. */
export interface Target {
  origin: string;
  path: string;
  headers: Record<string, string>;
  /** Non-streaming request body. */
  body: string;
  /** Streaming request body. */
  streamBody: string;
  /** What a complete stream ends with (default `data: [DONE]`; the messages surface: `message_stop`). */
  streamEnd?: string;
}

export interface Percentiles {
  p50: number;
  p99: number;
  count: number;
}

const DONE = 'data: [DONE]';

/** Unmeasured requests before a c=1 measurement: at least `requests`, for at least `ms`. */
export interface Warmup {
  requests: number;
  ms: number;
}

/** Runs `once` until the warm-up is done. */
async function warmUp(warmup: Warmup, once: () => Promise<unknown>): Promise<void> {
  const until = Date.now() + warmup.ms;
  for (let i = 0; i < warmup.requests || Date.now() < until; i += 1) await once();
}

/** Percentiles (milliseconds) of nanosecond samples. */
export function percentiles(samplesNs: BigInt64Array | bigint[]): Percentiles {
  const ms = Array.from(samplesNs, (v) => Number(v) / 1e6).sort((a, b) => a - b);
  const at = (q: number): number => ms[Math.min(ms.length - 1, Math.max(0, Math.ceil(q * ms.length) - 1))] ?? Number.NaN;
  return { p50: at(0.5), p99: at(0.99), count: ms.length };
}

function endsWithDone(tail: Buffer, end: string): boolean {
  return tail.includes(end);
}

/** Fails unless the status is 200. */
function ensureOk(status: number, what: string): void {
  if (status !== 200) throw new Error(`${what}: HTTP ${status}`);
}

/** c=1 non-streaming latency: a warm-up, then `count` requests timed until their body is read. */
/** Warms up, then takes `count` sequential samples of `once`; closes the client either way. */
async function sampleC1(client: Client, warmup: Warmup, count: number, once: () => Promise<bigint>): Promise<Percentiles> {
  const samples = new BigInt64Array(count);
  try {
    await warmUp(warmup, once);
    for (let i = 0; i < count; i += 1) samples[i] = await once();
  } finally {
    await client.close();
  }
  return percentiles(samples);
}

export async function latencyC1(target: Target, warmup: Warmup, count: number): Promise<Percentiles> {
  const client = new Client(target.origin, { pipelining: 1, keepAliveTimeout: 60_000, headersTimeout: 10_000, bodyTimeout: 10_000 });
  const once = async (): Promise<bigint> => {
    const started = process.hrtime.bigint();
    const res = await client.request({ method: 'POST', path: target.path, headers: target.headers, body: target.body });
    await res.body.arrayBuffer();
    const elapsed = process.hrtime.bigint() - started;
    ensureOk(res.statusCode, 'latency request');
    return elapsed;
  };
  return sampleC1(client, warmup, count, once);
}

/** Reads a stream body; returns the time its first chunk arrived and whether it ended with `end`. */
async function readStream(body: AsyncIterable<Buffer>, end = DONE): Promise<{ firstAt: bigint; complete: boolean }> {
  let firstAt = 0n;
  let tail = Buffer.alloc(0);
  for await (const chunk of body) {
    if (firstAt === 0n) firstAt = process.hrtime.bigint();
    tail = Buffer.concat([tail, chunk.subarray(-64)]).subarray(-64);
  }
  return { firstAt, complete: endsWithDone(tail, end) };
}

/** c=1 streaming time to first body byte (the stream is then read whole and checked). */
export async function ttfbC1(target: Target, warmup: Warmup, count: number): Promise<Percentiles> {
  const client = new Client(target.origin, { pipelining: 1, keepAliveTimeout: 60_000, headersTimeout: 10_000, bodyTimeout: 10_000 });
  const once = async (): Promise<bigint> => {
    const started = process.hrtime.bigint();
    const res = await client.request({ method: 'POST', path: target.path, headers: target.headers, body: target.streamBody });
    ensureOk(res.statusCode, 'stream request');
    const { firstAt, complete } = await readStream(res.body, target.streamEnd);
    if (!complete) throw new Error(`stream did not end with ${target.streamEnd ?? DONE}`);
    return firstAt - started;
  };
  return sampleC1(client, warmup, count, once);
}

export interface Throughput {
  perSecond: number;
  ok: number;
  failed: number;
  /** CPU use over the measured window. */
  cpu: CpuUse;
}

/** Non-streaming requests/s with autocannon: `warmupS` discarded, then `durationS` measured. */
export async function requestsPerSecond(target: Target, connections: number, durationS: number, warmupS: number): Promise<Throughput> {
  const options = {
    url: `${target.origin}${target.path}`,
    method: 'POST' as const,
    headers: target.headers,
    body: target.body,
    connections,
    pipelining: 1,
    timeout: 10,
  };
  if (warmupS > 0) await autocannon({ ...options, duration: warmupS });
  const before = cpuSnapshot();
  const result = await autocannon({ ...options, duration: durationS });
  const cpu = cpuUse(before, cpuSnapshot());
  const ok = result['2xx'];
  const failed = result.non2xx + result.errors + result.timeouts;
  return { perSecond: ok / (result.duration > 0 ? result.duration : durationS), ok, failed, cpu };
}

/** Streams/s: `connections` workers looping whole streams; only complete streams after the warm-up count. */
export async function streamsPerSecond(target: Target, connections: number, durationS: number, warmupS: number): Promise<Throughput> {
  const pool = new Pool(target.origin, { connections, pipelining: 1, keepAliveTimeout: 60_000, headersTimeout: 10_000, bodyTimeout: 10_000 });
  const startedAt = process.hrtime.bigint();
  const measureFrom = startedAt + BigInt(Math.round(warmupS * 1e9));
  const endAt = measureFrom + BigInt(Math.round(durationS * 1e9));
  let ok = 0;
  let failed = 0;
  let before = cpuSnapshot();
  const snapshot = setTimeout(() => { before = cpuSnapshot(); }, warmupS * 1000);
  const worker = async (): Promise<void> => {
    while (process.hrtime.bigint() < endAt) {
      try {
        const res = await pool.request({ method: 'POST', path: target.path, headers: target.headers, body: target.streamBody });
        const status = res.statusCode;
        const { complete } = await readStream(res.body, target.streamEnd);
        const now = process.hrtime.bigint();
        if (now < measureFrom || now > endAt) continue;
        if (status === 200 && complete) ok += 1;
        else failed += 1;
      } catch {
        failed += 1;
        await new Promise((r) => setTimeout(r, 10));
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: connections }, () => worker()));
  } finally {
    clearTimeout(snapshot);
    await pool.close();
  }
  return { perSecond: ok / durationS, ok, failed, cpu: cpuUse(before, cpuSnapshot()) };
}

/** One request to check a target answers with the upstream's reply; returns the response text. */
export async function probe(target: Target, stream: boolean): Promise<{ status: number; text: string }> {
  const client = new Client(target.origin, { headersTimeout: 10_000, bodyTimeout: 10_000 });
  try {
    const res = await client.request({ method: 'POST', path: target.path, headers: target.headers, body: stream ? target.streamBody : target.body });
    return { status: res.statusCode, text: await res.body.text() };
  } finally {
    await client.close();
  }
}
