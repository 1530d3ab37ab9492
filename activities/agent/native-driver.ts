/**
 * The native drivers (issue 26; docs/agent-drivers.md): Codex CLI (`codex`) and Claude Code
 * (`claude-code`) run unchanged inside the member's container, as the member's UID, reaching the
 * gateway only through the model relay (`agent-relay-run` serves the member's relay socket on a
 * loopback port for as long as the CLI runs). Their native event streams are normalized as they
 * arrive (native-lines.ts); the turn's result is the CLI's final answer. Codex runs as `codex
 * app-server`, spoken to over stdin (codex-app-server.ts), so its questions can be answered.
 *
 * Sessions: each CLI keeps its files under the member's session directory (`<sessionDir>/codex`,
 * `<sessionDir>/claude`), kept in the retained sandbox (and in its archive); the session id of the
 * last successful run is stored beside them (`<cli>.session`) and the next turn resumes it. A
 * resume that ends without any model output (a lost or corrupt session) is run again fresh, after a
 * `notice` (`session_reset`).
 */
import { execCliLines, redactPayload } from './cli-exec';
import type { CliLine, SplitLine } from './cli-lines';
import { redactSecret, tailWithMarker } from './driver-text';
import { claudeAllowResponse, claudeControlRequest, claudeErrorResponse, claudePromptLine, claudeQuestionResponse } from './claude-control';
import { CodexAppServer } from './codex-app-server';
import { claudeLine, newNativeRun, type NativeRun } from './native-lines';
import { NO_CHANNEL_REPLY, SandboxFileError, type AgentDriver, type DriverInput, type ExecResult, type QuestionReply, type QuestionRequest, type StdinWriter } from './types';

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
  /** Written first to a stdin that stays open (a conversation with the CLI); absent: the prompt, then stdin closes. */
  stdin?: string;
}

/** A run's open stdin, for a spec's {@link NativeSpec.control}. */
interface Conversation {
  input: DriverInput;
  write(text: string): void;
  end(): void;
}

/** A CLI whose whole run is a protocol on stdin/stdout (Codex's app-server): its first stdin line, then a writer; every stdout line. */
interface NativeProtocol {
  opening(): string;
  open(writer: StdinWriter): void;
  line(split: SplitLine): CliLine[];
  /** After the process ended (or failed): outstanding work settled, the run's failure named. */
  settle(stderr?: string): Promise<void>;
}

interface NativeSpec {
  dir: string;
  /** One stdout line of the CLI's event stream, normalized. */
  normalize?: (split: SplitLine, run: NativeRun) => CliLine[];
  /** Instead of `normalize` (and `Invocation.stdin`): the run's protocol, which reads every stdout line and writes stdin. */
  protocol?(input: DriverInput, run: NativeRun, resumeId: string | undefined): NativeProtocol;
  invocation(input: DriverInput, port: number, resumeId: string | undefined): Invocation;
  /** A line the driver answers on stdin (or that ends the conversation): handled here, true when it is not an event line. */
  control?(split: SplitLine, conversation: Conversation): Promise<boolean>;
}

function tomlString(value: string): string {
  return JSON.stringify(value); // a TOML basic string accepts JSON's escapes for these characters
}

const SPECS: Record<NativeKind, NativeSpec> = {
  codex: {
    dir: 'codex',
    protocol: (input, run, resumeId) => new CodexAppServer(run, {
      model: input.model, prompt: input.prompt, signal: input.signal, ...(resumeId ? { resumeId } : {}), ...(input.questions ? { questions: input.questions } : {}),
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
    normalize: claudeLine,
    invocation(input, port, resumeId) {
      return {
        // stream-json in and a permission prompt on stdio: the CLI's questions (`AskUserQuestion`)
        // come to the driver as control requests (claude-control.ts).
        argv: [
          'claude', '-p', '--input-format', 'stream-json', '--output-format', 'stream-json', '--verbose', '--permission-prompt-tool', 'stdio',
          '--model', input.model, '--dangerously-skip-permissions', ...(resumeId ? ['--resume', resumeId] : []),
        ],
        stdin: claudePromptLine(input.prompt),
        env: {
          CLAUDE_CONFIG_DIR: `${input.sessionDir}/claude`, ANTHROPIC_BASE_URL: `http://127.0.0.1:${port}`, ANTHROPIC_API_KEY: PLACEHOLDER_KEY,
          CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', DISABLE_AUTOUPDATER: '1', DISABLE_TELEMETRY: '1', DISABLE_ERROR_REPORTING: '1',
        },
        files: [],
      };
    },
    control: claudeControl,
  },
};


async function ask(conversation: Conversation, request: QuestionRequest): Promise<QuestionReply> {
  const { input } = conversation;
  return input.questions ? input.questions.ask(request, input.signal) : NO_CHANNEL_REPLY;
}

/** Claude Code's control requests (questions) and its `result` line (after which it waits for more input: stdin is closed). */
async function claudeControl(split: SplitLine, conversation: Conversation): Promise<boolean> {
  if (!('line' in split) || !(split.line.includes('"control_request"') || split.line.includes('"result"'))) return false;
  let obj: unknown;
  try {
    obj = JSON.parse(split.line);
  } catch {
    return false;
  }
  if (typeof obj !== 'object' || obj === null) return false;
  if ((obj as { type?: unknown }).type === 'result') {
    conversation.end();
    return false;
  }
  const control = claudeControlRequest(obj as Record<string, unknown>);
  if (!control) return false;
  if (control.kind === 'tool') conversation.write(claudeAllowResponse(control));
  else if (control.kind === 'other') conversation.write(claudeErrorResponse(control.requestId, `${control.subtype} is not supported by this host`));
  else if (control.questions.length === 0) conversation.write(claudeQuestionResponse(control, { kind: 'declined', message: 'The questions could not be read; continue with your best judgment.' }));
  else conversation.write(claudeQuestionResponse(control, await ask(conversation, { requestId: control.requestId, cli: 'claude-code', questions: control.questions })));
  return true;
}

const SESSION_ID = /^[A-Za-z0-9_.:-]{1,200}$/;

async function storedSession(input: DriverInput, spec: NativeSpec): Promise<string | undefined> {
  try {
    const id = (await input.sandbox.readFile(`${input.sessionDir}/${spec.dir}.session`, 1024)).trim();
    return SESSION_ID.test(id) ? id : undefined;
  } catch (err) {
    if (err instanceof SandboxFileError) return undefined;
    throw err;
  }
}

export function nativeDriver(kind: NativeKind): AgentDriver {
  const spec = SPECS[kind];
  return async (input) => {
    if (!input.relay) throw new Error(`The ${kind} driver needs the model relay, which this host runner did not start`);
    const resumeId = await storedSession(input, spec);
    let run = await runOnce(kind, spec, input, resumeId);
    if (resumeId !== undefined && run.native.result === undefined && !run.native.produced) {
      await input.events.emit('notice', { kind: 'session_reset', message: `The ${kind} session of this chat could not be resumed; this turn starts a new one.` });
      run = await runOnce(kind, spec, input, undefined);
    }
    const { native, exec } = run;
    if (native.result !== undefined) {
      if (native.sessionId && SESSION_ID.test(native.sessionId)) await input.sandbox.writeFile(`${input.sessionDir}/${spec.dir}.session`, `${native.sessionId}\n`);
      return { result: native.result };
    }
    if (exec.exitCode === RELAY_MISSING) throw new Error('The model relay is not reachable inside this sandbox (a sandbox created before native drivers has no relay mount: start a new chat)');
    const why = native.failure ?? tailWithMarker(exec.stderr.trim(), 2000);
    throw new Error(`The ${kind} CLI ${exec.exitCode === 0 ? 'ended' : `exited with code ${exec.exitCode}`} without an answer${why ? `: ${redactSecret(why, input.grantToken)}` : ''}`);
  };
}

async function runOnce(kind: NativeKind, spec: NativeSpec, input: DriverInput, resumeId: string | undefined): Promise<{ native: NativeRun; exec: ExecResult }> {
  const relay = input.relay!;
  const invocation = spec.invocation(input, relay.port, resumeId);
  for (const [path, content] of invocation.files) await input.sandbox.writeFile(path, content);
  const native = newNativeRun();
  const protocol = spec.protocol?.(input, native, resumeId);
  const normalize = protocol ? (split: SplitLine) => protocol.line(split) : spec.normalize;
  if (!normalize) throw new Error(`The ${kind} driver has no way to read the CLI's output`);
  let writer: StdinWriter | undefined;
  const conversation: Conversation = { input, write: (text) => writer?.write(text), end: () => writer?.end() };
  const stdin = protocol ? protocol.opening() : invocation.stdin;
  let exec: ExecResult | undefined;
  try {
    exec = await execCliLines(input, ['agent-relay-run', relay.socket, String(relay.port), ...invocation.argv], {
      maxOutputBytes: OUTPUT_BYTES, env: invocation.env, cwd: '/workspace', timeLimitMessage: `The turn reached its time limit while ${kind} was running.`,
      ...(stdin !== undefined ? { stdin, openStdin: (w: StdinWriter) => { writer = w; protocol?.open(w); } } : {}),
    }, async (split) => {
      if (spec.control && await spec.control(split, conversation)) return;
      for (const line of normalize(split, native)) {
        if (line.kind === 'event') await input.events.emit(line.type, redactPayload(input, line.payload), line.isError ? { isError: true } : undefined);
      }
    });
  } finally {
    await protocol?.settle(exec?.stderr);
  }
  return { native, exec };
}
