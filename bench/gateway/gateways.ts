/**
 * The systems under test: the fake upstream called directly, our gateway (built `dist/`), and
 * Portkey's open-source gateway (installed on demand into `.tools/bench-peers/`). Each gateway
 * runs pinned to its own core and is checked to relay the fake upstream's answer before use.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { generateSecret, hashSecret, secretPrefix } from '../../lib/crypto';
import { createDb } from '../../lib/db';
import { migrateLatest } from '../../migrations/runner';
import { DEV_DATABASE_URL } from '../../ops/dev/postgres';
import { probe, type Target } from './load';
import { firstLine, freePort, runCommand, startPinned, waitForHttp, type Started } from './processes';

export const PORTKEY_VERSION = '1.15.2';
/**
 * Portkey 1.15.2 declares `@hono/node-server: ^1.3.3`; from 1.14.2 on, that package's light
 * Response reuses the upstream fetch response's immutable Headers and every streamed answer fails
 * with `TypeError: immutable` (Portkey-AI/gateway issue #1389). 1.14.1 is the last working one.
 */
const PORTKEY_HONO_NODE_SERVER = '1.14.1';

const REQUEST = { model: 'bench-model', messages: [{ role: 'user', content: 'Hello' }], max_tokens: 16 };
const BODY = JSON.stringify(REQUEST);
const STREAM_BODY = JSON.stringify({ ...REQUEST, stream: true });
const CHAT_PATH = '/v1/chat/completions';
/** The same request on the messages surface (served through the chat path). */
const MESSAGES_REQUEST = { model: 'bench-model', max_tokens: 16, messages: [{ role: 'user', content: 'Hello' }] };
const MESSAGES_PATH = '/v1/messages';

export interface RunningGateway {
  target: Target;
  /** The gateway's process id (taskset execs the program, so it is the gateway itself). */
  pid?: number;
  stop(): Promise<void>;
}

export type GatewayStart = { ok: true; gateway: RunningGateway } | { ok: false; reason: string };

/** The fake upstream (`upstream-main.ts`) as its own process pinned to `core`, with the port it listens on. */
export async function startUpstreamProcess(root: string, core: number): Promise<{ upstream: Started; port: number }> {
  const upstream = startPinned({ core, command: process.execPath, cwd: root, args: ['--import', 'tsx', join('bench', 'gateway', 'upstream-main.ts'), '--port', '0'] });
  const { port } = JSON.parse(await firstLine(upstream.child, 20_000)) as { port: number };
  return { upstream, port };
}

/** The fake upstream called without a gateway. */
export function directTarget(upstreamPort: number): Target {
  return {
    origin: `http://127.0.0.1:${upstreamPort}`,
    path: CHAT_PATH,
    headers: { 'content-type': 'application/json', authorization: 'Bearer bench-key' },
    body: BODY,
    streamBody: STREAM_BODY,
  };
}

/** Sends one plain and one streamed request; returns why the target is unusable, or undefined. */
async function verify(target: Target): Promise<string | undefined> {
  const plain = await probe(target, false);
  if (plain.status !== 200) return `unavailable (${plain.status})`;
  if (!plain.text.includes('How can I help you today?')) return `unexpected answer: ${plain.text.slice(0, 120)}`;
  const stream = await probe(target, true);
  if (stream.status !== 200) return `streaming unavailable (${stream.status})`;
  if (!stream.text.includes('tok63') || !stream.text.includes(target.streamEnd ?? 'data: [DONE]')) return `incomplete stream: ${stream.text.slice(-120)}`;
  return undefined;
}

async function startAndVerify(started: Started, target: Target, ready: () => Promise<void>): Promise<GatewayStart> {
  try {
    await ready();
    const problem = await verify(target);
    if (problem === undefined) return { ok: true, gateway: { target, pid: started.child.pid, stop: () => started.stop() } };
    await started.stop();
    return { ok: false, reason: problem };
  } catch (err) {
    await started.stop();
    return { ok: false, reason: err instanceof Error ? err.message : String(err) };
  }
}

export interface OurGatewayOptions {
  root: string;
  core: number;
  upstreamPort: number;
  logLevel: 'info' | 'warn';
  workDir: string;
  /** With a database: API keys required (this key) and the request log written. */
  identity?: BenchIdentity;
  /** More settings for the gateway (e.g. `REQUEST_LOG_BATCH_SIZE`), applied last. */
  env?: NodeJS.ProcessEnv;
  /** The surface the load goes to (default chat completions). */
  surface?: 'chat' | 'messages';
}

export interface BenchIdentity {
  databaseUrl: string;
  key: string;
  /** Whether the request log writes `api_logs` rows (default true). */
  requestLog?: boolean;
}

/**
 * A fresh, migrated `gw_bench` database on the dev stack's PostgreSQL with one account and one
 * API key (made the way the gateway makes them), for the "keys + request log" row.
 */
export async function prepareBenchIdentity(): Promise<BenchIdentity> {
  const adminUrl = new URL(DEV_DATABASE_URL);
  adminUrl.pathname = '/postgres';
  const admin = createDb({ url: adminUrl.toString(), poolMax: 1, applicationName: 'bench' });
  try {
    await admin.raw('drop database if exists gw_bench with (force)');
    await admin.raw('create database gw_bench');
  } finally {
    await admin.destroy();
  }
  const url = new URL(DEV_DATABASE_URL);
  url.pathname = '/gw_bench';
  const db = createDb({ url: url.toString(), poolMax: 1, applicationName: 'bench' });
  try {
    await migrateLatest(db);
    const [user] = await db('users').insert({ email: 'bench@example.com', role: 'pro', email_verified_at: db.fn.now() }).returning<Array<{ id: string }>>('id');
    const key = generateSecret('gk');
    await db('api_keys').insert({ user_id: user!.id, name: 'bench', key_hash: hashSecret(key), prefix: secretPrefix(key) });
    return { databaseUrl: url.toString(), key };
  } finally {
    await db.destroy();
  }
}

/** Starts `dist/gateway/main.js` on a models file naming the upstream: without auth or database, or with `identity`. */
export async function startOurGateway(options: OurGatewayOptions): Promise<GatewayStart> {
  const main = join(options.root, 'dist', 'gateway', 'main.js');
  if (!existsSync(main)) return { ok: false, reason: 'unavailable (dist/gateway/main.js missing)' };
  const modelsPath = join(options.workDir, 'models.yaml');
  writeFileSync(modelsPath, [
    'models:',
    '  - id: bench-model',
    '    name: Bench Model',
    '    provider: generic_compat',
    `    base_url: http://127.0.0.1:${options.upstreamPort}/v1`,
    '    api_key: bench-key',
    '    max_output_length: 4096',
    '',
  ].join('\n'));
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    NODE_ENV: 'production',
    GATEWAY_HOST: '127.0.0.1',
    GATEWAY_PORT: String(port),
    MODELS_CONFIG_PATH: modelsPath,
    LOG_LEVEL: options.logLevel,
    ...(options.identity
      // One user drives all 64 connections: its concurrency limit (default 8) is lifted.
      ? { USER_AUTH_ENABLED: 'true', DATABASE_URL: options.identity.databaseUrl, AUTH_JWT_SECRET: 'bench-jwt-secret-bench-jwt-secret-bench', USER_CONCURRENCY_LIMIT: '0', REQUEST_LOG_ENABLED: String(options.identity.requestLog ?? true) }
      : { USER_AUTH_ENABLED: 'false', DB_ENABLED: 'false' }),
    ...options.env,
  };
  const started = startPinned({
    // BENCH_GATEWAY_NODE_ARGS: Node/V8 flags to try on our gateway only (e.g. GC settings), for an A/B.
    core: options.core, command: process.execPath, args: [...(process.env.BENCH_GATEWAY_NODE_ARGS?.split(/\s+/).filter(Boolean) ?? []), main], env, cwd: options.root,
    logFile: join(options.workDir, `gateway-${options.logLevel}${options.identity ? '-identity' : ''}.log`),
  });
  const messages = options.surface === 'messages';
  const target: Target = {
    origin: `http://127.0.0.1:${port}`,
    path: messages ? MESSAGES_PATH : CHAT_PATH,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${options.identity?.key ?? 'x'}` },
    body: messages ? JSON.stringify(MESSAGES_REQUEST) : BODY,
    streamBody: messages ? JSON.stringify({ ...MESSAGES_REQUEST, stream: true }) : STREAM_BODY,
    ...(messages ? { streamEnd: 'event: message_stop' } : {}),
  };
  return startAndVerify(started, target, () => waitForHttp(`${target.origin}/health`, 20_000, started.child, 200));
}

/** Starts the zero-logic reference proxy (`bare-proxy.ts`): the floor any Node gateway starts from. */
export async function startBareProxy(root: string, core: number, upstreamPort: number, workDir: string): Promise<GatewayStart> {
  const port = await freePort();
  const started = startPinned({
    core, command: process.execPath, cwd: root,
    args: ['--import', 'tsx', join('bench', 'gateway', 'bare-proxy.ts'), `http://127.0.0.1:${upstreamPort}`, String(port)],
    logFile: join(workDir, 'bare-proxy.log'),
  });
  const target: Target = { origin: `http://127.0.0.1:${port}`, path: CHAT_PATH, headers: { 'content-type': 'application/json' }, body: BODY, streamBody: STREAM_BODY };
  return startAndVerify(started, target, () => waitForHttp(`${target.origin}/health`, 20_000, started.child, 200));
}

function installedPortkey(prefix: string): string | undefined {
  const pkg = join(prefix, 'node_modules', '@portkey-ai', 'gateway', 'package.json');
  const hono = join(prefix, 'node_modules', '@hono', 'node-server', 'package.json');
  if (!existsSync(pkg) || !existsSync(hono)) return undefined;
  const version = (path: string): unknown => (JSON.parse(readFileSync(path, 'utf8')) as { version?: unknown }).version;
  if (version(pkg) !== PORTKEY_VERSION || version(hono) !== PORTKEY_HONO_NODE_SERVER) return undefined;
  return join(prefix, 'node_modules', '@portkey-ai', 'gateway', 'build', 'start-server.js');
}

/**
 * Installs Portkey into `<root>/.tools/bench-peers` when missing. Its only install script,
 * `postinstall: patch-package`, is a no-op for the published package (it ships no `patches/`),
 * so npm 11 leaving it unapproved changes nothing.
 */
export async function ensurePortkey(root: string): Promise<string> {
  const prefix = join(root, '.tools', 'bench-peers');
  const found = installedPortkey(prefix);
  if (found) return found;
  mkdirSync(prefix, { recursive: true });
  writeFileSync(join(prefix, 'package.json'), `${JSON.stringify({
    private: true,
    dependencies: { '@portkey-ai/gateway': PORTKEY_VERSION },
    overrides: { '@hono/node-server': PORTKEY_HONO_NODE_SERVER },
  }, null, 2)}\n`);
  console.log(`bench: installing @portkey-ai/gateway@${PORTKEY_VERSION} into .tools/bench-peers`);
  const code = await runCommand('npm', ['install', '--prefix', prefix, '--no-audit', '--no-fund'], root, 300_000);
  const installed = installedPortkey(prefix);
  if (code !== 0 || !installed) throw new Error(`npm install of @portkey-ai/gateway failed (exit ${code})`);
  return installed;
}

/**
 * Starts Portkey (`--headless`, NODE_ENV=production) and routes requests to the upstream through it.
 * It has no flag for the listening address (it binds every interface); the benchmark only ever
 * sends to 127.0.0.1.
 */
export async function startPortkey(root: string, core: number, upstreamPort: number, workDir: string): Promise<GatewayStart> {
  let script: string;
  try {
    script = await ensurePortkey(root);
  } catch (err) {
    return { ok: false, reason: err instanceof Error ? err.message : String(err) };
  }
  const port = await freePort();
  const started = startPinned({
    core, command: process.execPath, args: [script, `--port=${port}`, '--headless'],
    env: { PATH: process.env.PATH, HOME: process.env.HOME, NODE_ENV: 'production' },
    cwd: join(root, '.tools', 'bench-peers'), logFile: join(workDir, 'portkey.log'),
  });
  const target: Target = {
    origin: `http://127.0.0.1:${port}`,
    path: CHAT_PATH,
    headers: {
      'content-type': 'application/json',
      authorization: 'Bearer bench-key',
      'x-portkey-provider': 'openai',
      'x-portkey-custom-host': `http://127.0.0.1:${upstreamPort}/v1`,
    },
    body: BODY,
    streamBody: STREAM_BODY,
  };
  return startAndVerify(started, target, () => waitForHttp(`${target.origin}/`, 20_000, started.child));
}
