/**
 * `npm run bench:gateway:cpu`: CPU time the gateway process spends per request (user + system,
 * from /proc) under c=64 (or `--connections`) non-streaming load, next to the bare proxy. CPU per request is far less
 * sensitive to other load on the machine than req/s, so it is the figure to A/B a hot-path change
 * with. Flags: `--seconds N` (measured window, default 6), `--rounds N` (alternating rounds,
 * default 2), `--only ours|bare`, `--log-level`, `--stream`, `--connections N` (default 64), `--against <checkout>` (also measures the
 * built gateway of another checkout, e.g. a worktree of the previous commit, in alternation),
 * `--against-log-level info|warn` (the other checkout's level, e.g. `--against . --against-log-level warn`
 * to weigh the info line in one build; an A/B ends with the median of the rounds' differences), `--key` (our gateway authenticates an API key; needs PostgreSQL, as `npm start` brings up),
 * `--request-log` (implies `--key`; also writes the request log), `--messages` (the A/B is ours on
 * `/v1/messages` against ours on chat completions, same build: issue 19's surface cost). "others" is the CPU that
 * processes outside the bench (PostgreSQL, for the request log) spent in the window, per request.
 * Targets 127.0.0.1 only; bounded.
 */
import { readFileSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { cpuSnapshot, cpuUse } from './cpu';
import { prepareBenchIdentity, startBareProxy, startOurGateway, type BenchIdentity, type GatewayStart } from './gateways';
import { installCleanupHooks, pinProcessesNamed, pinSelf } from './processes';
import { startBenchUpstream } from './upstream';

const TICKS_PER_SECOND = 100;

/** [user, system] clock ticks of a process. */
function cpuTicks(pid: number): [number, number] {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return [Number(fields[11]), Number(fields[12])]; // utime, stime (fields 14 and 15)
}

let connections = 64;

async function load(origin: string, path: string, headers: Record<string, string>, body: string, seconds: number): Promise<number> {
  const result = await autocannon({ url: `${origin}${path}`, method: 'POST', headers, body, connections, duration: seconds });
  if (result.non2xx > 0 || result.errors > 0) throw new Error(`non2xx ${result.non2xx} errors ${result.errors}`);
  return result.requests.total;
}

/** Measures one gateway; returns its CPU time per request in microseconds. */
async function measure(name: string, start: () => Promise<GatewayStart>, seconds: number, stream: boolean): Promise<number> {
  const started = await start();
  if (!started.ok) throw new Error(`${name}: ${started.reason}`);
  const { target } = started.gateway;
  const { pid } = started.gateway;
  try {
    const body = stream ? target.streamBody : target.body;
    await load(target.origin, target.path, target.headers, body, 2);
    if (pid === undefined) throw new Error('no pid');
    const before = cpuTicks(pid);
    const machineBefore = cpuSnapshot();
    const startedAt = process.hrtime.bigint();
    const requests = await load(target.origin, target.path, target.headers, body, seconds);
    const after = cpuTicks(pid);
    const { others } = cpuUse(machineBefore, cpuSnapshot());
    const wallSeconds = Number(process.hrtime.bigint() - startedAt) / 1e9;
    const perRequest = (ticks: number): string => ((ticks * 1_000_000) / TICKS_PER_SECOND / requests).toFixed(1);
    const user = after[0] - before[0];
    const system = after[1] - before[1];
    const othersUs = ((others / 100) * wallSeconds * 1_000_000) / requests;
    console.log(`${name.padEnd(28)} ${String(Math.round(requests / seconds)).padStart(6)} req/s  ${perRequest(user + system).padStart(6)} µs CPU/request (user ${perRequest(user)}, system ${perRequest(system)}; others ${othersUs.toFixed(1)})`);
    return Number(perRequest(user + system));
  } finally {
    await started.gateway.stop();
  }
}

/**
 * The A/B's verdict: the median of the rounds' differences (ours − against), which one noisy round
 * cannot move the way it moves a mean, and how many rounds each side won.
 */
function pairSummary(pairs: readonly number[]): string {
  const sorted = [...pairs].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  const median = sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  const lower = pairs.filter((d) => d < 0).length;
  const signed = (n: number): string => `${n > 0 ? '+' : ''}${n.toFixed(1)}`;
  return `ours − against, CPU per request over ${pairs.length} round${pairs.length === 1 ? '' : 's'}: median ${signed(median)} µs (from ${signed(sorted[0]!)} to ${signed(sorted[sorted.length - 1]!)}); ours lower in ${lower}, against lower in ${pairs.length - lower - pairs.filter((d) => d === 0).length}`;
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { seconds: { type: 'string', default: '6' }, rounds: { type: 'string', default: '2' }, only: { type: 'string' }, 'log-level': { type: 'string', default: 'warn' }, stream: { type: 'boolean', default: false }, against: { type: 'string' }, 'against-log-level': { type: 'string' }, connections: { type: 'string', default: '64' }, key: { type: 'boolean', default: false }, 'request-log': { type: 'boolean', default: false }, messages: { type: 'boolean', default: false } } });
  connections = Number(values.connections);
  installCleanupHooks();
  pinSelf(0);
  pinProcessesNamed('postgres', 0); // the gateway alone on core 1, as in bench:gateway
  const root = resolve(__dirname, '..', '..');
  const workDir = join(root, '.data', 'bench', 'cpu');
  mkdirSync(workDir, { recursive: true });
  const upstream = await startBenchUpstream({ port: 0, sseBatch: 1 });
  const logLevel = values['log-level'] === 'info' ? 'info' : 'warn';
  const seconds = Number(values.seconds);
  const requestLog = values['request-log'];
  const identity: BenchIdentity | undefined = values.key || requestLog ? { ...(await prepareBenchIdentity()), requestLog } : undefined;
  const described = (level: string): string => `LOG_LEVEL=${level}${identity ? (requestLog ? ', key + request log' : ', key') : ''}`;
  const label = described(logLevel);
  const againstLevel = values['against-log-level'] === undefined ? logLevel : values['against-log-level'] === 'info' ? 'info' : 'warn';
  const againstLabel = described(againstLevel);
  const pairs: number[] = [];
  try {
    for (let round = 0; round < Number(values.rounds); round += 1) {
      if (values.only !== 'ours') await measure('bare Node proxy (floor)', () => startBareProxy(root, 1, upstream.port, workDir), seconds, values.stream);
      const ours = values.only === 'bare' ? undefined : await measure(`ours (${label})`, () => startOurGateway({ root, core: 1, upstreamPort: upstream.port, logLevel, workDir, identity }), seconds, values.stream);
      if (values.messages) {
        const messages = await measure(`ours /v1/messages (${label})`, () => startOurGateway({ root, core: 1, upstreamPort: upstream.port, logLevel, workDir, identity, surface: 'messages' }), seconds, values.stream);
        if (ours !== undefined) pairs.push(messages - ours);
        continue;
      }
      const against = values.against;
      if (!against) continue;
      const theirs = await measure(`against (${againstLabel})`, () => startOurGateway({ root: resolve(against), core: 1, upstreamPort: upstream.port, logLevel: againstLevel, workDir, identity }), seconds, values.stream);
      if (ours !== undefined) pairs.push(ours - theirs);
    }
    if (pairs.length > 0) console.log(values.messages ? pairSummary(pairs).replace('ours − against', 'messages − chat').replace(/ours lower in (\d+), against lower in (\d+)/, 'messages lower in $1, chat lower in $2') : pairSummary(pairs));
  } finally {
    await upstream.close();
  }
}

main().then(() => process.exit(0), (err: unknown) => {
  console.error(err);
  process.exit(1);
});
