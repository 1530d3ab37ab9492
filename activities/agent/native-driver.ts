/**
 * The native drivers (issue 26; docs/agent-drivers.md): Codex CLI (`codex`) and Claude Code
 * (`claude-code`) run unchanged inside the member's container, as the member's UID, reaching the
 * gateway only through the model relay (`agent-relay-run` serves the member's relay socket on a
 * loopback port for as long as the CLI runs). Their native event streams are normalized as they
 * arrive; the turn's result is the CLI's final answer. Each run is a session over the CLI's stdin
 * and stdout (stdin-session.ts), so the CLI's questions can be answered: Codex as `codex app-server`
 * (codex-app-server.ts), Claude Code in stream-json mode (claude-control.ts).
 *
 * Sessions: each CLI keeps its files under the member's session directory (`<sessionDir>/codex`,
 * `<sessionDir>/claude`), kept in the retained sandbox (and in its archive); the session id of the
 * last successful run is stored beside them (`<cli>.session`) and the next turn resumes it. A
 * resume that ends without any model output (a lost or corrupt session) is run again fresh, after a
 * `notice` (`session_reset`). Each completed turn also records where the session stands
 * (`<cli>.turns.json`, native-marks.ts), so a fork can start from the session at that turn: a
 * fork's first run forks the original's session there instead of resuming.
 */
import { execCliLines, redactPayload } from './cli-exec';
import { redactSecret, tailWithMarker } from './driver-text';
import { ClaudeStreamJson } from './claude-control';
import { CodexAppServer } from './codex-app-server';
import { TOOL_RELAY_SERVER, newNativeRun, type NativeRun } from './native-lines';
import type { NativeProtocol } from './stdin-session';
import { SandboxFileError, type AgentDriver, type DriverInput, type ExecResult, type StdinWriter } from './types';
import { TOOL_RELAY_MCP_PATH } from './model-relay';
import { listRelayTools, ToolRelayRefusedError } from './tool-relay-client';
import { MARKS_MAX_BYTES, NATIVE_ID, marksFile, parseNativeMarks, withTurnMark, type NativeMarks } from './native-marks';

export type NativeKind = 'codex' | 'claude-code';

/** Bytes of stdout/stderr the sandbox keeps of one run (stdout is consumed as it streams). */
const OUTPUT_BYTES = 256 * 1024;
/** The placeholder key a CLI holds: the relay replaces it with the turn's grant. */
const PLACEHOLDER_KEY = 'relay-holds-the-grant';
/** Exit status of `agent-relay-run` when the relay socket or forwarder is missing. */
const RELAY_MISSING = 97;

interface Invocation {
  argv: string[];
  env: Record<string, string>;
  /** Files written (as the member) before the run. */
  files: Array<[string, string]>;
}

/** Where a run's CLI session comes from: a new one, the stored one resumed, or a fork's first run (native-marks.ts). */
interface SessionStart {
  resumeId?: string;
  fork?: { session: string; at: string };
}

interface NativeSpec {
  dir: string;
  invocation(input: DriverInput, port: number, start: SessionStart): Invocation;
  /** The run's session: it writes stdin (kept open) and reads every stdout line. */
  protocol(input: DriverInput, run: NativeRun, start: SessionStart): NativeProtocol;
}

function tomlString(value: string): string {
  return JSON.stringify(value); // a TOML basic string accepts JSON's escapes for these characters
}

const SPECS: Record<NativeKind, NativeSpec> = {
  codex: {
    dir: 'codex',
    protocol: (input, run, { resumeId, fork }) => new CodexAppServer(run, {
      model: input.model, prompt: input.prompt, signal: input.signal, ...(resumeId ? { resumeId } : {}), ...(input.questions ? { questions: input.questions } : {}),
      ...(fork ? { fork: { threadId: fork.session, lastTurnId: fork.at } } : {}),
    }),
    invocation(input, port) {
      const home = `${input.sessionDir}/codex`;
      const config = [
        `model = ${tomlString(input.model)}`,
        'model_provider = "gateway"',
        // Nothing outside the relay: no update checks, no analytics.
        'check_for_update_on_startup = false',
        // request_user_input in Default mode is an unstable feature: enabled, without its warning.
        'suppress_unstable_features_warning = true',
        '[features]',
        'default_mode_request_user_input = true',
        '[analytics]',
        'enabled = false',
        '[model_providers.gateway]',
        'name = "gateway"',
        `base_url = "http://127.0.0.1:${port}/v1"`,
        'wire_api = "responses"',
        'env_key = "AGENT_RELAY_KEY"',
        // The model relay retries with the drivers' one policy: Codex's own retries would multiply it.
        'request_max_retries = 0',
        'stream_max_retries = 0',
        // The chat's MCP tools: the tool relay's endpoint through the model relay (docs/mcp.md "Drivers").
        // `required`: Codex waits for it before the turn's first model request (else the first
        // request may go out without the MCP tools) and fails the turn when it cannot start.
        ...(input.toolRelay ? [`[mcp_servers.${TOOL_RELAY_SERVER}]`, `url = "http://127.0.0.1:${port}${TOOL_RELAY_MCP_PATH}"`, 'required = true', 'startup_timeout_sec = 30'] : []),
        '',
      ].join('\n');
      return {
        argv: ['codex', 'app-server'], // the thread (new or resumed) is chosen over JSON-RPC
        env: { CODEX_HOME: home, AGENT_RELAY_KEY: PLACEHOLDER_KEY },
        files: [[`${home}/config.toml`, config]],
      };
    },
  },
  'claude-code': {
    dir: 'claude',
    protocol: (input, run) => new ClaudeStreamJson(run, { prompt: input.prompt, signal: input.signal, ...(input.questions ? { questions: input.questions } : {}) }),
    invocation(input, port, { resumeId, fork }) {
      // A fork's first run: a new session made from the original's, cut after the anchor's last message.
      const session = fork ? ['--resume', fork.session, '--resume-session-at', fork.at, '--fork-session'] : resumeId ? ['--resume', resumeId] : [];
      return {
        // stream-json in and a permission prompt on stdio: the CLI's questions (`AskUserQuestion`)
        // come to the driver as control requests (claude-control.ts).
        argv: [
          'claude', '-p', '--input-format', 'stream-json', '--output-format', 'stream-json', '--verbose', '--permission-prompt-tool', 'stdio',
          '--model', input.model, '--dangerously-skip-permissions', ...session,
          // The chat's MCP tools: the tool relay's endpoint through the model relay (docs/mcp.md "Drivers").
          ...(input.toolRelay ? ['--mcp-config', JSON.stringify({ mcpServers: { [TOOL_RELAY_SERVER]: { type: 'http', url: `http://127.0.0.1:${port}${TOOL_RELAY_MCP_PATH}` } } }), '--strict-mcp-config'] : []),
        ],
        env: {
          CLAUDE_CONFIG_DIR: `${input.sessionDir}/claude`, ANTHROPIC_BASE_URL: `http://127.0.0.1:${port}`, ANTHROPIC_API_KEY: PLACEHOLDER_KEY,
          // The model relay retries with the drivers' one policy: Claude Code's own retries would multiply it.
          CLAUDE_CODE_MAX_RETRIES: '0',
          CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', DISABLE_AUTOUPDATER: '1', DISABLE_TELEMETRY: '1', DISABLE_ERROR_REPORTING: '1',
          // The chat's MCP tools are offered to the model directly, not deferred behind Claude Code's ToolSearch.
          ...(input.toolRelay ? { ENABLE_TOOL_SEARCH: 'false' } : {}),
        },
        files: [],
      };
    },
  },
};


async function readOptional(input: DriverInput, path: string, maxBytes: number): Promise<string | undefined> {
  try {
    return await input.sandbox.readFile(path, maxBytes);
  } catch (err) {
    if (err instanceof SandboxFileError) return undefined;
    throw err;
  }
}

async function storedSession(input: DriverInput, spec: NativeSpec): Promise<string | undefined> {
  const id = (await readOptional(input, `${input.sessionDir}/${spec.dir}.session`, 1024))?.trim();
  return id !== undefined && NATIVE_ID.test(id) ? id : undefined;
}

/**
 * After a successful run: the session to resume next turn, and this turn's mark (where a fork can
 * start). The marks are written even without a new mark: a fork's point is cleared once made.
 */
async function saveSession(input: DriverInput, spec: NativeSpec, native: NativeRun, marks: NativeMarks): Promise<void> {
  const session = native.sessionId !== undefined && NATIVE_ID.test(native.sessionId) ? native.sessionId : undefined;
  if (session) await input.sandbox.writeFile(`${input.sessionDir}/${spec.dir}.session`, `${session}\n`);
  const at = native.turnMark !== undefined && NATIVE_ID.test(native.turnMark) ? native.turnMark : undefined;
  const next = session && at ? withTurnMark(marks, { job: input.jobId, seq: input.turnSeq, session, at }) : { version: 1 as const, turns: marks.turns };
  if ((session && at) || marks.fork) await input.sandbox.writeFile(marksFile(input.sessionDir, spec.dir), JSON.stringify(next));
}

export function nativeDriver(kind: NativeKind): AgentDriver {
  const spec = SPECS[kind];
  return async (given) => {
    if (!given.relay) throw new Error(`The ${kind} driver needs the model relay, which this host runner did not start`);
    const input = await withToolsOnlyWhenBound(given);
    const marks = parseNativeMarks(await readOptional(input, marksFile(input.sessionDir, spec.dir), MARKS_MAX_BYTES));
    // A fork's first run forks the original's session at the anchor; it never falls back to a new
    // session (that would continue the fork from the wrong point without saying so).
    const resumeId = marks.fork ? undefined : await storedSession(input, spec);
    let run = await runOnce(kind, spec, input, marks.fork ? { fork: marks.fork } : { resumeId });
    if (resumeId !== undefined && run.native.result === undefined && !run.native.produced) {
      await input.events.emit('notice', { kind: 'session_reset', message: `The ${kind} session of this chat could not be resumed; this turn starts a new one.` });
      run = await runOnce(kind, spec, input, {});
    }
    const { native, exec } = run;
    if (native.result !== undefined) {
      await saveSession(input, spec, native, marks);
      return { result: native.result };
    }
    if (exec.exitCode === RELAY_MISSING) throw new Error('The model relay is not reachable inside this sandbox (a sandbox created before native drivers has no relay mount: start a new chat)');
    const why = native.failure ?? tailWithMarker(exec.stderr.trim(), 2000);
    const forking = marks.fork ? " while forking the original chat's session at the fork's anchor" : '';
    throw new Error(`The ${kind} CLI ${exec.exitCode === 0 ? 'ended' : `exited with code ${exec.exitCode}`} without an answer${forking}${why ? `: ${redactSecret(why, input.grantToken)}` : ''}`);
  };
}

/**
 * The input with the tool relay only when the chat has MCP tools now: a CLI configured with an MCP
 * server connects to it at start-up, which a chat without tools should not pay for. A relay refusal
 * (the attempt is superseded) ends the turn; any other failure to list runs the CLI without tools.
 */
async function withToolsOnlyWhenBound(input: DriverInput): Promise<DriverInput> {
  const { toolRelay, ...rest } = input;
  if (!toolRelay) return input;
  try {
    return (await listRelayTools(toolRelay, input.signal)).length > 0 ? input : rest;
  } catch (err) {
    if (err instanceof ToolRelayRefusedError) throw err;
    return rest;
  }
}

async function runOnce(kind: NativeKind, spec: NativeSpec, input: DriverInput, start: SessionStart): Promise<{ native: NativeRun; exec: ExecResult }> {
  const relay = input.relay!;
  const invocation = spec.invocation(input, relay.port, start);
  for (const [path, content] of invocation.files) await input.sandbox.writeFile(path, content);
  const native = newNativeRun();
  const protocol = spec.protocol(input, native, start);
  let exec: ExecResult | undefined;
  try {
    exec = await execCliLines(input, ['agent-relay-run', relay.socket, String(relay.port), ...invocation.argv], {
      maxOutputBytes: OUTPUT_BYTES, env: invocation.env, cwd: '/workspace', timeLimitMessage: `The turn reached its time limit while ${kind} was running.`,
      stdin: protocol.opening(), openStdin: (writer: StdinWriter) => protocol.open(writer),
    }, async (split) => {
      for (const line of protocol.line(split)) {
        if (line.kind === 'event') await input.events.emit(line.type, redactPayload(input, line.payload), line.isError ? { isError: true } : undefined);
      }
    });
  } finally {
    await protocol.settle(exec?.stderr);
  }
  return { native, exec };
}
