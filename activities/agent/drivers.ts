/**
 * Chooses the agent driver of a turn: the built-in tool loop or the configured coding CLI, whose
 * command line (`AGENT_CLI_COMMAND`) is split into argv here without any shell: see
 * {@link splitCommandLine} and docs/agent-events.md ("CLI command line").
 */
import type { AgentDriverKind, Settings } from '../../lib/settings';
import type { AgentDriver } from './types';
import { builtinDriver } from './builtin-driver';
import { cliDriver } from './cli-driver';
import { nativeDriver } from './native-driver';

export type DriverKind = AgentDriverKind;

export function driverFor(kind: DriverKind, settings: Pick<Settings, 'AGENT_CLI_COMMAND'>): AgentDriver {
  if (kind === 'builtin') return builtinDriver;
  if (kind === 'codex' || kind === 'claude-code') return nativeDriver(kind);
  return cliDriver({ command: splitCommandLine(settings.AGENT_CLI_COMMAND) });
}

/** Whether a driver runs a native CLI through the model relay. */
export function usesModelRelay(kind: DriverKind): boolean {
  return kind === 'codex' || kind === 'claude-code';
}

/**
 * Splits a command line into argv like a POSIX shell does for words, and nothing more: blanks
 * separate words; '…' keeps everything literally; "…" keeps everything except that `\` escapes
 * `"`, `\`, `$` and `` ` ``; outside quotes `\` escapes any character. No variables, globs,
 * redirections or operators (`;`, `|`, `&&` are ordinary characters). An unterminated quote or a
 * trailing `\`, or an empty line, is an error naming the setting.
 */
export function splitCommandLine(line: string): string[] {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  let quote: "'" | '"' | undefined;
  for (let i = 0; i < line.length; i += 1) {
    const ch = line.charAt(i);
    if (quote === "'") {
      if (ch === "'") quote = undefined;
      else word += ch;
    } else if (quote === '"') {
      if (ch === '"') quote = undefined;
      else if (ch === '\\' && i + 1 < line.length && '"\\$`'.includes(line.charAt(i + 1))) word += line.charAt(++i);
      else word += ch;
    } else if (/\s/.test(ch)) {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
    } else {
      inWord = true;
      if (ch === "'" || ch === '"') quote = ch;
      else if (ch === '\\') {
        if (i + 1 >= line.length) throw new Error('AGENT_CLI_COMMAND ends with a lone backslash.');
        word += line.charAt(++i);
      } else word += ch;
    }
  }
  if (quote) throw new Error(`AGENT_CLI_COMMAND has an unterminated ${quote} quote.`);
  if (inWord) words.push(word);
  if (words.length === 0) throw new Error('AGENT_CLI_COMMAND is empty.');
  return words;
}
