/**
 * The real coding-agent CLIs (issue 26), pinned here and only here: Codex CLI and Claude Code.
 *
 * Both publish a native binary per platform as an npm package (`@openai/codex@<v>-linux-x64`,
 * `@anthropic-ai/claude-code-linux-x64@<v>`); the umbrella packages only pick one (Claude Code's by
 * an install script). So the platform package is fetched with `npm pack` (a registry download, no
 * install script runs), unpacked and cached as `.tools/agent-clis/<name>-<version>/`, keyed by
 * version; concurrent fetches (clones sharing `.tools`) are serialized by a lock directory. The
 * tests run these binaries on the host, and the sandbox image build copies them in.
 */
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { withBuildLock } from './build-lock';
import { BootstrapError, TOOLS, run, say } from './sh';

export interface AgentCli {
  /** The executable's name on `PATH` in the sandbox image. */
  command: 'codex' | 'claude';
  /** The platform package fetched with `npm pack`. */
  pkg: string;
  version: string;
  /** The executable inside the unpacked package. */
  binary: string;
}

export const AGENT_CLIS = {
  codex: { command: 'codex', pkg: '@openai/codex', version: '0.171.0-linux-x64', binary: 'vendor/x86_64-unknown-linux-musl/bin/codex' },
  'claude-code': { command: 'claude', pkg: '@anthropic-ai/claude-code-linux-x64', version: '2.1.332', binary: 'claude' },
} as const satisfies Record<string, AgentCli>;

export type AgentCliName = keyof typeof AGENT_CLIS;

/** Where a CLI's unpacked package lives. */
export function agentCliDir(name: AgentCliName): string {
  const cli = AGENT_CLIS[name];
  return join(TOOLS, 'agent-clis', `${name}-${cli.version}`);
}

/** The cached executable of a CLI (may not exist yet: see {@link ensureAgentCli}). */
export function agentCliBinary(name: AgentCliName): string {
  return join(agentCliDir(name), AGENT_CLIS[name].binary);
}

function works(name: AgentCliName): boolean {
  const binary = agentCliBinary(name);
  return existsSync(binary) && run(binary, ['--version'], { timeout: 30_000 }).status === 0;
}

/** Fetches and unpacks a CLI unless its cached binary runs; its executable's path. Idempotent. */
export async function ensureAgentCli(name: AgentCliName): Promise<string> {
  if (works(name)) return agentCliBinary(name);
  const dir = agentCliDir(name);
  mkdirSync(join(TOOLS, 'agent-clis'), { recursive: true });
  await withBuildLock(dir, () => {
    if (works(name)) return;
    const cli = AGENT_CLIS[name];
    say(`fetching ${cli.pkg}@${cli.version} from the npm registry (about 180 MB)`);
    const scratch = mkdtempSync(`${dir}.partial-`);
    try {
      const pack = run('npm', ['pack', `${cli.pkg}@${cli.version}`, '--pack-destination', scratch, '--silent'], { timeout: 600_000 });
      const file = pack.stdout.trim().split('\n').pop();
      if (pack.status !== 0 || !file) throw new BootstrapError('agent-clis', `npm pack ${cli.pkg}@${cli.version} failed: ${pack.stderr.trim().slice(-500)}`);
      const unpacked = join(scratch, 'unpacked');
      mkdirSync(unpacked);
      const tar = run('tar', ['-xzf', join(scratch, file), '-C', unpacked, '--strip-components=1'], { timeout: 300_000 });
      if (tar.status !== 0) throw new BootstrapError('agent-clis', `unpacking ${file} failed: ${tar.stderr.trim()}`);
      rmSync(dir, { recursive: true, force: true });
      renameSync(unpacked, dir);
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
    if (!works(name)) throw new BootstrapError('agent-clis', `${agentCliBinary(name)} does not run (--version)`);
  }, 'agent-clis');
  return agentCliBinary(name);
}

/** Both CLIs (for the tests and the sandbox image). */
export async function ensureAgentClis(): Promise<Record<AgentCliName, string>> {
  return { codex: await ensureAgentCli('codex'), 'claude-code': await ensureAgentCli('claude-code') };
}

if (require.main === module) {
  ensureAgentClis().then((paths) => {
    for (const [name, path] of Object.entries(paths)) console.log(`${name}: ${path}`);
  }, (err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
