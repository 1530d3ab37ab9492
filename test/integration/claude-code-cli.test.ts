/**
 * The real Claude Code CLI (the pinned native binary, ops/dev/agent-clis.ts) against the gateway's
 * messages surface, unchanged (docs/inference-surfaces.md "Messages surface", issue 26): `claude -p`
 * in a temporary working directory with `ANTHROPIC_BASE_URL` at the gateway and a gateway key, once
 * over a chat-completions route and once over a messages-API route (`vendor_h_direct`). The scripted
 * upstream answers the first call with a call of the Write tool Claude Code offered (creating a file
 * in that directory) and the call after it with a final text; side calls get a short text, token
 * counts a number. Offline: a temporary HOME and config directory, non-essential traffic, telemetry,
 * error reporting and the updater off (only loopback connections, checked once with strace).
 *
 * Permissions: `--dangerously-skip-permissions` is refused under root, so the test allows just the
 * Write tool (`--permission-mode acceptEdits --allowedTools Write`), which works as any user.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureAgentCli } from '../../ops/dev/agent-clis';
import { startFakeMessagesUpstream, type FakeMessagesUpstream, type MessagesBehaviour, type MessagesRequest } from '../support/fake-messages-upstream';
import { closeAll, startFakeUpstream, type Behaviour, type FakeUpstream, type RecordedRequest } from '../support/fake-upstream';
import { startTestGateway, type TestGateway } from '../support/gateway';

const MODEL = 'claude-opus-5-5';
const SMALL_MODEL = 'claude-haiku-4-5';
const FINAL = 'All done: hello.txt is written.';
const RUN_TIMEOUT_MS = 90_000;

interface CliRun {
  code: number | null;
  events: Array<Record<string, unknown>>;
  stderr: string;
}

const children = new Set<ChildProcess>();

/** Runs `claude -p` in `cwd` against `baseUrl`; killed after {@link RUN_TIMEOUT_MS}. */
function runClaude(binary: string, baseUrl: string, cwd: string, home: string, prompt: string, model = MODEL): Promise<CliRun> {
  const env: Record<string, string> = {
    PATH: '/usr/local/bin:/usr/bin:/bin',
    HOME: home,
    CLAUDE_CONFIG_DIR: join(home, '.claude'),
    ANTHROPIC_BASE_URL: baseUrl,
    ANTHROPIC_API_KEY: 'gateway-key',
    ANTHROPIC_DEFAULT_HAIKU_MODEL: SMALL_MODEL,
    ANTHROPIC_SMALL_FAST_MODEL: SMALL_MODEL,
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_TELEMETRY: '1',
    DISABLE_ERROR_REPORTING: '1',
    DISABLE_AUTOUPDATER: '1',
  };
  const args = ['-p', prompt, '--output-format', 'stream-json', '--verbose', '--model', model, '--permission-mode', 'acceptEdits', '--allowedTools', 'Write'];
  return new Promise((resolve, reject) => {
    const child = spawn(binary, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(child);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => { stdout += c.toString(); });
    child.stderr.on('data', (c: Buffer) => { stderr += c.toString(); });
    const timer = setTimeout(() => child.kill('SIGKILL'), RUN_TIMEOUT_MS);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      children.delete(child);
      const events = stdout.split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l) as Record<string, unknown>);
      resolve({ code, events, stderr });
    });
  });
}

interface Block { type: string; name?: string; input?: Record<string, unknown>; tool_use_id?: string; text?: string }

function blocks(events: CliRun['events'], type: 'assistant' | 'user'): Block[] {
  return events.filter((e) => e.type === type).flatMap((e) => {
    const content = (e.message as { content?: unknown }).content;
    return Array.isArray(content) ? content as Block[] : [];
  });
}

/** What both runs show: the file written, the tool use and its result, the final answer. */
function assertRun(run: CliRun, dir: string): void {
  assert.equal(run.code, 0, `claude exited ${run.code}: ${run.stderr.slice(-2000)}`);
  const file = join(dir, 'hello.txt');
  assert.ok(existsSync(file), 'the Write tool created the file');
  assert.equal(readFileSync(file, 'utf8'), 'hi from the gateway\n');
  const uses = blocks(run.events, 'assistant').filter((b) => b.type === 'tool_use');
  assert.deepEqual(uses.map((b) => [b.name, b.input]), [['Write', { file_path: file, content: 'hi from the gateway\n' }]]);
  assert.equal(blocks(run.events, 'user').filter((b) => b.type === 'tool_result').length, 1, 'the tool result is in the stream');
  const result = run.events.find((e) => e.type === 'result')!;
  assert.equal(result.subtype, 'success');
  assert.equal(result.is_error, false);
  assert.equal(result.result, FINAL);
}

describe('Claude Code CLI against the messages surface', function () {
  this.timeout(240_000);
  let binary: string;
  const dirs: string[] = [];

  function tempDir(prefix: string): string {
    const dir = mkdtempSync(join(tmpdir(), prefix));
    dirs.push(dir);
    return dir;
  }

  before(async () => {
    binary = await ensureAgentCli('claude-code');
  });
  after(() => {
    for (const child of children) child.kill('SIGKILL');
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  describe('over a chat-completions route', () => {
    let upstream: FakeUpstream;
    let gw: TestGateway;
    let work: string;

    before(async () => {
      work = tempDir('claude-chat-');
      upstream = await startFakeUpstream();
      upstream.setResponder((request) => chatAnswer(request, work));
      gw = await startTestGateway({
        modelsYaml: `models:
  - { id: claude-opus-5.5, name: Opus, provider: generic_compat, base_url: "${upstream.url}", api_key: up, provider_model_id: chat-opus, max_output_length: 32000, supports_tools: true }
  - { id: claude-haiku-4.5, name: Haiku, provider: generic_compat, base_url: "${upstream.url}", api_key: up, provider_model_id: chat-haiku, max_output_length: 8000, supports_tools: true }
`,
      });
    });
    after(async () => {
      await closeAll(gw);
      await upstream.close();
    });

    it('writes the file with its Write tool and finishes; the second call carries the tool result', async () => {
      const run = await runClaude(binary, gw.url, work, tempDir('claude-home-'), 'Create hello.txt saying hi');
      assertRun(run, work);
      const main = upstream.chatRequests().filter((r) => offersWrite(r.body));
      assert.ok(main.length >= 2, `two calls offering Write, got ${main.length}`);
      const first = main[0]!.body as ChatBody;
      assert.equal(first.model, 'chat-opus');
      assert.ok(first.messages.some((m) => m.role === 'system' && String(m.content).includes(work)), 'the system turn with the working directory, in place');
      const second = main.find((r) => hasToolResult(r.body))!.body as ChatBody;
      const tool = second.messages.find((m) => m.role === 'tool')!;
      assert.equal(tool.tool_call_id, 'call_write_1');
      assert.match(String(tool.content), /hello\.txt/);
    });

    it('an unknown model: the gateway\'s 404 names it, and Claude Code tells the user to pick another model', async () => {
      const before = upstream.requests.length;
      const run = await runClaude(binary, gw.url, work, tempDir('claude-home-'), 'Hello', 'claude-nonexistent-9-9');
      const result = run.events.find((e) => e.type === 'result')!;
      assert.equal(result.is_error, true);
      assert.match(String(result.result), /issue with the selected model \(claude-nonexistent-9-9\)/);
      assert.equal(upstream.requests.length, before, 'nothing reached the upstream');
      const refusals = gw.logs.lines.filter((l) => l.code === 'model_not_found' && l.status === 404);
      assert.ok(refusals.length > 0, 'answered 404');
      assert.match(String(refusals[0]!.msg), /'claude-nonexistent-9-9' \(looked up as 'claude-nonexistent-9\.9'\) does not exist on this gateway/);
    });
  });

  describe('over a messages-API route (vendor_h_direct)', () => {
    let upstream: FakeMessagesUpstream;
    let gw: TestGateway;
    let work: string;

    before(async () => {
      work = tempDir('claude-messages-');
      upstream = await startFakeMessagesUpstream();
      upstream.setResponder((request) => messagesAnswer(request, work));
      gw = await startTestGateway({
        modelsYaml: `models:
  - { id: claude-opus-5.5, name: Opus, provider: vendor_h_direct, base_url: "${upstream.origin}", api_key: upstream-key, provider_model_id: vendor-opus, max_output_length: 128000, supports_tools: true }
  - { id: claude-haiku-4.5, name: Haiku, provider: vendor_h_direct, base_url: "${upstream.origin}", api_key: upstream-key, provider_model_id: vendor-haiku, max_output_length: 64000, supports_tools: true }
`,
      });
    });
    after(async () => {
      await closeAll(gw);
      await upstream.close();
    });

    it('writes the file with its Write tool and finishes; the request reaches the upstream intact; the second call carries the tool result', async () => {
      const run = await runClaude(binary, `${gw.url}/anthropic`, work, tempDir('claude-home-'), 'Create hello.txt saying hi');
      assertRun(run, work);
      const main = upstream.requests.filter((r) => offersWrite(r.body));
      assert.ok(main.length >= 2, `two calls offering Write, got ${main.length}`);
      const first = main[0]!;
      assert.equal(first.path, '/v1/messages');
      assert.equal(first.headers['x-api-key'], 'upstream-key');
      assert.match(String(first.headers['anthropic-beta']), /claude-code-/);
      assert.equal(first.body.model, 'vendor-opus');
      assert.ok(first.body.thinking !== undefined && first.body.context_management !== undefined, 'thinking and context_management forwarded');
      assert.ok((first.body.messages as Array<{ role: string }>).some((m) => m.role === 'system'), 'the system turn forwarded as sent');
      const second = main.find((r) => hasToolResult(r.body))!;
      const results = (second.body.messages as Array<{ content: unknown }>).flatMap((m) => (Array.isArray(m.content) ? m.content as Block[] : [])).filter((b) => b.type === 'tool_result');
      assert.deepEqual(results.map((b) => b.tool_use_id), ['toolu_write_1']);
    });

    it('a stream cut short: Claude Code retries without streaming, and that call is served', async () => {
      const retryWork = tempDir('claude-retry-');
      let cut = 0;
      upstream.setResponder((request) => {
        if (request.body.stream === true && offersWrite(request.body) && !hasToolResult(request.body) && cut === 0) {
          cut += 1;
          return { kind: 'stream_cut', text: 'Let me' };
        }
        return messagesAnswer(request, retryWork);
      });
      const from = upstream.requests.length;
      const run = await runClaude(binary, gw.url, retryWork, tempDir('claude-home-'), 'Create hello.txt saying hi');
      assertRun(run, retryWork);
      const calls = upstream.requests.slice(from).filter((r) => offersWrite(r.body)).map((r) => r.body.stream);
      assert.deepEqual(calls.slice(0, 2), [true, false], 'the cut stream, then the same call without streaming');
    });
  });
});

interface ChatBody { model: string; stream?: boolean; messages: Array<{ role: string; content: unknown; tool_call_id?: string }>; tools?: Array<{ function?: { name?: string }; name?: string }> }

function offersWrite(body: unknown): boolean {
  const tools = (body as ChatBody | undefined)?.tools ?? [];
  return tools.some((t) => (t.function?.name ?? t.name) === 'Write');
}

function hasToolResult(body: unknown): boolean {
  return JSON.stringify((body as ChatBody | undefined)?.messages ?? []).includes('"tool_call_id"') || JSON.stringify((body as ChatBody | undefined)?.messages ?? []).includes('"tool_result"');
}

/** The chat upstream's script: Write first, then the final text; anything else a short text. */
function chatAnswer(request: RecordedRequest, dir: string): Behaviour {
  const stream = (request.body as ChatBody | undefined)?.stream === true;
  const text = (content: string): Behaviour => (stream ? { kind: 'sse', pieces: [content] } : { kind: 'json', content });
  if (!offersWrite(request.body)) return text('Side answer.');
  if (hasToolResult(request.body)) return text(FINAL);
  return { kind: 'tool_call', id: 'call_write_1', name: 'Write', arguments: { file_path: join(dir, 'hello.txt'), content: 'hi from the gateway\n' } };
}

/** The messages upstream's script, the same turns in its own format. */
function messagesAnswer(request: MessagesRequest, dir: string): MessagesBehaviour {
  if (/count_tokens/.test(request.path)) return { kind: 'count', inputTokens: 1234 };
  if (!offersWrite(request.body)) return { kind: 'message', content: [{ type: 'text', text: 'Side answer.' }] };
  if (hasToolResult(request.body)) return { kind: 'message', content: [{ type: 'text', text: FINAL }] };
  return {
    kind: 'message', stopReason: 'tool_use',
    content: [{ type: 'thinking', thinking: 'Write it.', signature: 'sig-1' }, { type: 'tool_use', id: 'toolu_write_1', name: 'Write', input: { file_path: join(dir, 'hello.txt'), content: 'hi from the gateway\n' } }],
  };
}
