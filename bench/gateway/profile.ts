/**
 * `npm run bench:gateway:profile`: CPU profile of the built gateway under c=64 non-streaming load
 * (or streaming with `--stream`; on the messages surface with `--messages`). Prints the functions with the most self time and leaves the
 * `.cpuprofile` in `.data/bench/` (open it in Chrome DevTools). Targets 127.0.0.1 only; bounded.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { startBenchUpstream } from './upstream';
import { prepareBenchIdentity } from './gateways';
import { freePort, pinSelf, waitForHttp } from './processes';

interface ProfileNode { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; hitCount?: number }

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { seconds: { type: 'string', default: '8' }, stream: { type: 'boolean', default: false }, messages: { type: 'boolean', default: false }, 'log-level': { type: 'string', default: 'info' }, identity: { type: 'boolean', default: false }, bare: { type: 'boolean', default: false } } });
  // --identity: API keys required and the request log written (a fresh gw_bench database).
  pinSelf(0); // load generator and fake upstream on core 0, the profiled server alone on core 1
  const identity = values.identity ? await prepareBenchIdentity() : undefined;
  const root = join(__dirname, '../..');
  const dir = join(root, '.data/bench/profile');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const upstream = await startBenchUpstream({ port: 0, sseBatch: 1 });
  const models = join(dir, 'models.yaml');
  writeFileSync(models, `models:\n  - { id: bench-model, name: B, provider: generic_compat, base_url: "http://127.0.0.1:${upstream.port}/v1", api_key: k }\n`);
  const port = await freePort();
  // --bare: profile the floor (bench/gateway/bare-proxy.ts) under the same load, for comparison.
  const program = values.bare ? ['--import', 'tsx', join(root, 'bench/gateway/bare-proxy.ts'), `http://127.0.0.1:${upstream.port}`, String(port)] : [join(root, 'dist/gateway/main.js')];
  const gateway = spawn('taskset', ['-c', '1', process.execPath, '--cpu-prof', `--cpu-prof-dir=${dir}`, ...program], {
    env: {
      ...process.env, GATEWAY_HOST: '127.0.0.1', GATEWAY_PORT: String(port), MODELS_CONFIG_PATH: models, LOG_LEVEL: values['log-level'],
      ...(identity
        ? { USER_AUTH_ENABLED: 'true', DATABASE_URL: identity.databaseUrl, USER_CONCURRENCY_LIMIT: '0', AUTH_JWT_SECRET: 'bench-jwt-secret-bench-jwt-secret-bench' }
        : { USER_AUTH_ENABLED: 'false', DB_ENABLED: 'false' }),
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  try {
    await waitForHttp(`http://127.0.0.1:${port}/health`, 15_000, gateway);
    // --messages: the same request on the messages surface (`/v1/messages`, translated to the chat route).
    const body = JSON.stringify({ model: 'bench-model', messages: [{ role: 'user', content: 'Hello' }], max_tokens: 16, ...(values.stream ? { stream: true } : {}) });
    const path = values.messages ? '/v1/messages' : '/v1/chat/completions';
    const result = await autocannon({ url: `http://127.0.0.1:${port}${path}`, method: 'POST', headers: { 'content-type': 'application/json', ...(identity ? { authorization: `Bearer ${identity.key}` } : {}) }, body, connections: 64, duration: Number(values.seconds) });
    console.log(`req/s ${Math.round(result.requests.average)}  non2xx ${result.non2xx}  errors ${result.errors}`);
  } finally {
    gateway.kill('SIGTERM');
    await new Promise((r) => gateway.once('exit', r));
    await upstream.close();
  }
  const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
  if (!file) throw new Error('no profile written');
  const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as { nodes: ProfileNode[] };
  const totals = new Map<string, number>();
  let all = 0;
  for (const node of profile.nodes) {
    const hits = node.hitCount ?? 0;
    all += hits;
    const { functionName, url, lineNumber } = node.callFrame;
    const key = `${functionName || '(anonymous)'} ${url.replace(/^.*node_modules\//, 'nm/').replace(/^file:\/\/.*\/main\//, '')}:${lineNumber + 1}`;
    totals.set(key, (totals.get(key) ?? 0) + hits);
  }
  const top = [...totals.entries()].sort((a, b) => b[1] - a[1]).slice(0, 40);
  for (const [key, hits] of top) console.log(`${((100 * hits) / all).toFixed(1).padStart(5)}%  ${key}`);
  console.log(`profile: ${join(dir, file)}`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
