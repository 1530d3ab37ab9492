/**
 * The README's quick start, run as written against the stack started the way `npm start` starts it
 * (`ops/dev/start.ts`, after the bootstrap) with no registry and no credential in its environment,
 * so the demo model is chosen. The stack gets its own free ports, a fresh database, its own host
 * id, control queue, schedules, object store and secrets, so it never touches a running
 * `npm start`. The README's ```sh quick-start block runs in bash (`-euo pipefail`) with `GATEWAY`
 * set to the test gateway, the documented way to move the port. The test then checks the
 * outcomes: the administrator is created; `/v1/models` lists the demo; curl and the `openai`
 * client get the demo's labelled answer; the agent chat's events show the tool use and its result;
 * and the file the agent wrote comes out of the workspace archive.

 * The agent commands go to the gateway's port, which forwards them to the API (docs/one-origin.md).
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEMO_LABEL } from '../../ops/dev/demo-script';
import { freeLoopbackPort } from '../../ops/dev/free-port';
import { freshDatabase, type TestDatabase } from '../support/db';
import { removeContainers, testRunId } from '../support/docker';
import { endHostWorkflows } from '../support/host-workflows';
import { temporalEnv, uniqueTaskQueue } from '../support/temporal';
import { waitFor } from '../support/wait';

const ROOT = join(__dirname, '../..');
const WORKSPACE_ARCHIVE = '/tmp/workspace.tgz';

/** The README's quick-start block. */
function quickStartBlock(): string {
  const match = /```sh quick-start\n([\s\S]*?)```/.exec(readFileSync(join(ROOT, 'README.md'), 'utf8'));
  assert.ok(match, 'README.md has a ```sh quick-start block');
  return match[1]!;
}

/** The environment with every registry and credential setting removed: a fresh machine's. */
function unconfiguredEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const name of ['MODELS_CONFIG_PATH', 'MODELS_CONFIG', 'AGGREGATOR_API_KEY', 'DISTRIBUTION_CONFIG_PATH', 'DISTRIBUTION_CONFIG_MODE']) delete env[name];
  return env;
}

function run(command: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs: number): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => { stdout += c; });
    child.stderr.setEncoding('utf8').on('data', (c: string) => { stderr += c; });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe('e2e: the README quick start against npm start with no credentials (demo model)', function () {
  this.timeout(600_000);
  let t: TestDatabase;
  let start: ChildProcess | undefined;
  let output = '';
  const hostId = `qs-${testRunId}`.toLowerCase().replace(/[^a-z0-9._-]/g, '-');
  const controlQueue = uniqueTaskQueue('quick-start');
  const ports = { gateway: 0, api: 0, demo: 0 };

  before(async () => {
    t = await freshDatabase();
    ports.gateway = await freeLoopbackPort();
    ports.api = await freeLoopbackPort();
    ports.demo = await freeLoopbackPort();
    const secret = () => randomBytes(36).toString('base64url');
    start = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'ops/dev/start.ts')], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...unconfiguredEnv(),
        DATABASE_URL: t.url, GATEWAY_HOST: '127.0.0.1', GATEWAY_PORT: String(ports.gateway), API_HOST: '127.0.0.1', API_PORT: String(ports.api),
        DEMO_MODEL_PORT: String(ports.demo), AGENT_HOST_ID: hostId, TEMPORAL_CONTROL_TASK_QUEUE: controlQueue,
        AGENT_DELETION_SWEEP_SCHEDULE_ID: `test-deletion-sweep-${controlQueue}`, AGENT_IDLE_STOP_SCHEDULE_ID: `test-idle-stop-${controlQueue}`,
        OBJECT_STORE_FS_ROOT: mkdtempSync(join(tmpdir(), 'quick-start-store-')),
        // Secrets of this stack only (npm start would otherwise keep them under .data/secrets/).
        AUTH_JWT_SECRET: secret(), GATEWAY_GRANT_DISPATCH_TOKEN: secret(), AGENT_SETTINGS_ENCRYPTION_KEY: secret(), AGENT_CONTROL_TOKEN_SECRET: secret(),
      },
    });
    for (const stream of [start.stdout!, start.stderr!]) stream.setEncoding('utf8').on('data', (c: string) => { output += c; });
    await waitFor(() => output.includes('[start] stack is up') || start!.exitCode !== null, 'npm start is up', 300_000);
    assert.equal(start.exitCode, null, `start exited:\n${output.slice(-4000)}`);
    // The gateway has loaded its registry and the API answers.
    await waitFor(async () => (await fetch(`http://127.0.0.1:${ports.gateway}/health/ready`).catch(() => undefined))?.ok === true, 'gateway ready', 60_000);
    await waitFor(async () => (await fetch(`http://127.0.0.1:${ports.api}/health`).catch(() => undefined))?.ok === true, 'API up', 60_000);
  });

  after(async () => {
    if (start && start.exitCode === null) {
      const exited = new Promise((resolve) => start!.once('exit', resolve));
      start.kill('SIGINT');
      await exited;
    }
    const env = await temporalEnv();
    await endHostWorkflows(env.client, [hostId]);
    for (const id of [`test-deletion-sweep-${controlQueue}`, `test-idle-stop-${controlQueue}`]) await env.client.schedule.getHandle(id).delete().catch(() => undefined);
    await removeContainers({ 'agent.host': hostId });
    rmSync(join(ROOT, '.data/host', `${hostId}.credential`), { force: true });
    rmSync(WORKSPACE_ARCHIVE, { force: true });
    await t?.drop();
  });

  it('npm start says, in one line, that the demo model is serving and is not an LLM', () => {
    const lines = output.split('\n').filter((l) => l.includes('DEMO MODEL'));
    assert.equal(lines.length, 1, output.slice(-4000));
    assert.match(lines[0]!, new RegExp(`serving .*127\\.0\\.0\\.1:${ports.demo}/v1.*NOT an LLM`));
  });

  it('the quick-start block runs as written and does what it says', async () => {
    const block = quickStartBlock();
    assert.ok(block.includes('$GATEWAY/v1/agent/jobs'), 'the agent commands go to the gateway');
    const env: NodeJS.ProcessEnv = { ...unconfiguredEnv(), DATABASE_URL: t.url, GATEWAY: `http://127.0.0.1:${ports.gateway}` };
    const result = await run('bash', ['-euo', 'pipefail', '-c', block], env, 300_000);
    const out = result.stdout;
    assert.equal(result.code, 0, `bash exited ${result.code}\nstdout:\n${out}\nstderr:\n${result.stderr}`);
    assert.match(out, /Created administrator you@example\.com \(user id \d+\), with agent\.use/);
    assert.match(out, /^demo \(demo\)$/m, 'the models list marks the demo');
    assert.match(out, /^demo-embedding \(demo\)$/m);
    const chat = out.split('\n').find((l) => l.startsWith('{') && l.includes('chat.completion'));
    assert.ok(chat, `a chat completion from curl in:\n${out}`);
    assert.ok((JSON.parse(chat) as { choices: Array<{ message: { content: string } }> }).choices[0]!.message.content.startsWith(DEMO_LABEL));
    assert.ok(out.split('\n').some((l) => l.startsWith(`${DEMO_LABEL}: I give scripted answers only. You said: "Say hi"`)), 'the openai client prints the answer');
    const events = out.split('\n').filter((l) => l.startsWith('data: {')).map((l) => JSON.parse(l.slice(6)) as { event_type: string; payload: Record<string, unknown> });
    const types = events.map((e) => e.event_type);
    for (const type of ['turn_started', 'tool_use', 'tool_result', 'message', 'turn_completed']) assert.ok(types.includes(type), `${type} in ${types.join(', ')}`);
    assert.deepEqual(events.filter((e) => e.event_type === 'tool_use').map((e) => e.payload.tool_name), ['write_file', 'bash']);
    assert.equal(out.trimEnd().split('\n').at(-1), 'hi', 'the last command prints hello.txt from the workspace archive');
  });
});
