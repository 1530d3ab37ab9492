/**
 * The agent a client declares (`metadata.agent` in `api_logs`, read by the automation score as
 * the coding-agent opener share, docs/automation-score.md): the leading product token of `User-Agent`
 * (`claude-cli/1.0.3 (external, cli)` → `claude-cli`) when it names a known interactive or coding
 * agent. Other clients (SDKs, HTTP libraries, browsers) declare no agent.
 */

/** Leading `User-Agent` tokens of interactive and coding agents (lower case). */
export const KNOWN_AGENTS: ReadonlySet<string> = new Set([
  'aider', 'amp', 'claude-cli', 'claude-code', 'cline', 'codex', 'codex-cli', 'codex_cli_rs', 'continue', 'crush',
  'cursor', 'droid', 'gemini-cli', 'goose', 'kilo-code', 'kiro', 'openhands', 'opencode', 'qwen-code', 'roo-code',
  'windsurf', 'zed',
]);

/** The leading product token of a `User-Agent` (before `/`, space or `;`), lower case; undefined when empty. */
export function leadingToken(userAgent: string | undefined): string | undefined {
  if (!userAgent) return undefined;
  const match = /^\s*([^\s/;()]+)/.exec(userAgent);
  return match ? match[1]!.toLowerCase() : undefined;
}

/** The declared agent name, or undefined. */
export function declaredAgent(userAgent: string | undefined): string | undefined {
  const token = leadingToken(userAgent);
  return token !== undefined && KNOWN_AGENTS.has(token) ? token : undefined;
}
