/**
 * Runs the real Codex CLI (`codex exec --json`, the binary `ops/dev/agent-clis.ts` pins) against a
 * gateway: a temporary `CODEX_HOME` whose `config.toml` defines one model provider (`base_url` the
 * gateway's `/v1`, `wire_api = "responses"`, the key in an environment variable), a temporary
 * working directory, no approvals and no sandbox (the directory is the test's own), update checks
 * and analytics off. Every run is bounded by a timeout; {@link CodexRuns.killAll} ends what is left.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureAgentCli } from '../../ops/dev/agent-clis';

export interface CodexRun {
  /** Exit code (`null` when killed by a signal: the timeout). */
  code: number | null;
  /** The JSON lines of stdout, parsed (other lines dropped). */
  events: Array<Record<string, unknown>>;
  stdout: string;
  stderr: string;
  /** The run's working directory. */
  workdir: string;
}

export interface CodexRunOptions {
  /** The gateway's origin, e.g. `http://127.0.0.1:4000`. */
  gatewayUrl: string;
  apiKey: string;
  model: string;
  prompt: string;
  timeoutMs?: number;
}

/** The children started by one test file, so `after` can end them. */
export class CodexRuns {
  private readonly children = new Set<ChildProcess>();

  async run(options: CodexRunOptions): Promise<CodexRun> {
    const binary = await ensureAgentCli('codex');
    const home = mkdtempSync(join(tmpdir(), 'codex-home-'));
    const workdir = mkdtempSync(join(tmpdir(), 'codex-work-'));
    writeFileSync(join(home, 'config.toml'), [
      `model = ${JSON.stringify(options.model)}`,
      'model_provider = "gateway"',
      'check_for_update_on_startup = false',
      '',
      '[analytics]',
      'enabled = false',
      '',
      '[model_providers.gateway]',
      'name = "gateway"',
      `base_url = ${JSON.stringify(`${options.gatewayUrl}/v1`)}`,
      'wire_api = "responses"',
      'env_key = "GATEWAY_TEST_KEY"',
      'request_max_retries = 0',
      'stream_max_retries = 0',
      '',
    ].join('\n'));
    const args = ['exec', '--json', '--skip-git-repo-check', '--dangerously-bypass-approvals-and-sandbox', '--ephemeral', '-C', workdir, options.prompt];
    const child = spawn(binary, args, {
      cwd: workdir,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, CODEX_HOME: home, GATEWAY_TEST_KEY: options.apiKey, NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.children.add(child);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => { stdout += c.toString(); });
    child.stderr.on('data', (c: Buffer) => { stderr += c.toString(); });
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 60_000);
    const code = await new Promise<number | null>((resolve) => child.on('close', (exit) => resolve(exit)));
    clearTimeout(timer);
    this.children.delete(child);
    const events = stdout.split('\n').flatMap((line): Array<Record<string, unknown>> => {
      try {
        const parsed = JSON.parse(line) as Record<string, unknown> | null;
        return parsed !== null && typeof parsed === 'object' ? [parsed] : [];
      } catch {
        return [];
      }
    });
    return { code, events, stdout, stderr, workdir };
  }

  /** SIGKILLs every run still going. */
  killAll(): void {
    for (const child of this.children) child.kill('SIGKILL');
    this.children.clear();
  }
}

/** The shell tools Codex offers, in the order a script prefers them. */
const SHELL_TOOLS = ['exec_command', 'shell_command', 'shell'];

/**
 * The shell tool Codex offered (named in chat `tools[].function.name` or Responses `tools[].name`)
 * and the arguments that run `command` with it; `undefined` when it offered none.
 */
export function codexShellCall(tools: ReadonlyArray<Record<string, unknown>>, command: string): { name: string; arguments: Record<string, unknown> } | undefined {
  const names = tools.map((t) => (t.function as Record<string, unknown> | undefined)?.name ?? t.name);
  const name = SHELL_TOOLS.find((n) => names.includes(n));
  if (name === undefined) return undefined;
  return { name, arguments: name === 'exec_command' ? { cmd: command } : name === 'shell_command' ? { command } : { command: ['bash', '-lc', command] } };
}
