/**
 * The processes `npm start` runs in the foreground (docs/dev-stack.md "Terminal output"): it
 * starts them in phases, each phase after the previous one is ready (an HTTP `/health` answering
 * 200, or a log line saying the process is polling), so nothing starts before what it depends on.
 * Every output line goes, as written, to `.data/logs/start-<UTC date>.log`; the terminal gets
 * it readable (ops/dev/log-format.ts). Once stopping, the drain lines only go to that file (errors
 * excepted); a process that has to be killed, or exits non-zero while stopping, has its drain lines
 * shown. When all have exited, one summary line: `stopped gateway, api, control, host in 1.2 s`.
 * If a process exits on its own, the others are stopped and the group exits non-zero.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs';
import { join } from 'node:path';
import { formatLine, LEVEL_VALUES, parsePinoLine, startLine } from './log-format';

/** How a process shows it is ready: `/health` answering 200, or a log line with this message. */
export type Readiness = { health: string } | { logMessage: string };

export interface ProcessSpec {
  name: string;
  /** Script run with the current Node (`--enable-source-maps`), relative to the root. */
  script: string;
  env?: Record<string, string>;
  ready: Readiness;
}

export interface ProcessGroupOptions {
  root: string;
  /** Environment of every process (a spec's `env` is added on top). */
  env: NodeJS.ProcessEnv;
  /** Where the full log goes (`start-<date>.log` inside). */
  logDir: string;
  /** Readable, coloured lines (a terminal) or JSON lines prefixed with the process. */
  readable: boolean;
  colour: boolean;
  /** Milliseconds between SIGTERM and SIGKILL. */
  graceMs: number;
  /** Longest wait for a process to become ready. Default 120 s. */
  readyTimeoutMs?: number;
  /** Called once every process has exited, with the exit code the group ends with. */
  onExit(code: number): void;
  /** Where the terminal lines go (default this process's stdout and stderr; tests capture them). */
  stdout?: NodeJS.WritableStream;
  stderr?: NodeJS.WritableStream;
}

interface Member {
  spec: ProcessSpec;
  child: ChildProcess;
  /** Lines held back while stopping (shown if the process fails to stop cleanly). */
  drain: string[];
  exited: boolean;
  killed: boolean;
  onLine?: (record: Record<string, unknown> | undefined) => void;
}

/** A group of child processes with ordered start, readable output and a quiet stop. */
export class ProcessGroup {
  private readonly members = new Map<string, Member>();
  private readonly file: WriteStream;
  private stopping: { reason: string; code: number; startedAt: number } | undefined;
  private finished = false;

  private readonly stdout: NodeJS.WritableStream;
  private readonly stderr: NodeJS.WritableStream;

  constructor(private readonly options: ProcessGroupOptions) {
    this.stdout = options.stdout ?? process.stdout;
    this.stderr = options.stderr ?? process.stderr;
    mkdirSync(options.logDir, { recursive: true });
    this.file = createWriteStream(join(options.logDir, `start-${new Date().toISOString().slice(0, 10)}.log`), { flags: 'a' });
  }

  /** Whether a stop has begun (Ctrl-C, or a process exited). */
  get isStopping(): boolean {
    return this.stopping !== undefined;
  }

  /** The log file of this run. */
  get logFile(): string {
    return String(this.file.path);
  }

  /** `npm start`'s own message, to the terminal and the log file. */
  say(message: string, level: 'info' | 'warn' | 'error' = 'info'): void {
    this.file.write(`[start] ${message}\n`);
    const out = level === 'info' ? this.stdout : this.stderr;
    out.write(`${startLine(message, { readable: this.options.readable, colour: this.options.colour, level })}\n`);
  }

  /** Starts `specs` together and resolves once each is ready; rejects when one exits or times out first. */
  async startPhase(specs: readonly ProcessSpec[]): Promise<void> {
    await Promise.all(specs.map((spec) => this.startOne(spec)));
  }

  private startOne(spec: ProcessSpec): Promise<void> {
    if (this.stopping) return Promise.reject(new Error(`not starting ${spec.name}: stopping`));
    const child = spawn(process.execPath, ['--enable-source-maps', join(this.options.root, spec.script)], {
      cwd: this.options.root,
      env: { ...this.options.env, ...spec.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const member: Member = { spec, child, drain: [], exited: false, killed: false };
    this.members.set(spec.name, member);
    this.pipe(member, child.stdout, this.stdout);
    this.pipe(member, child.stderr, this.stderr);
    const exited = new Promise<never>((_, reject) => {
      child.on('exit', (code, signal) => {
        member.exited = true;
        this.onMemberExit(member, code, signal);
        reject(new Error(`${spec.name} exited (${signal ?? code}) before it was ready`));
      });
    });
    exited.catch(() => undefined);
    return Promise.race([this.readiness(member), exited]);
  }

  private readiness(member: Member): Promise<void> {
    const { spec } = member;
    const timeoutMs = this.options.readyTimeoutMs ?? 120_000;
    const deadline = Date.now() + timeoutMs;
    const timedOut = (): Error => new Error(`${spec.name} was not ready within ${timeoutMs / 1000} s (${'health' in spec.ready ? `GET ${spec.ready.health}` : `log line "${spec.ready.logMessage}"`}); see ${this.logFile}`);
    if ('logMessage' in spec.ready) {
      const message = spec.ready.logMessage;
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(timedOut()), timeoutMs);
        timer.unref();
        member.onLine = (record) => {
          if (record?.msg !== message) return;
          clearTimeout(timer);
          member.onLine = undefined;
          resolve();
        };
      });
    }
    const url = spec.ready.health;
    return (async () => {
      while (!member.exited && !this.stopping) {
        if (await answers200(url)) return;
        if (Date.now() > deadline) throw timedOut();
        await new Promise((r) => setTimeout(r, 150));
      }
      throw new Error(`${spec.name} stopped before it was ready`);
    })();
  }

  private pipe(member: Member, stream: NodeJS.ReadableStream, out: NodeJS.WritableStream): void {
    let pending = '';
    const emit = (line: string): void => {
      this.file.write(`[${member.spec.name}] ${line}\n`);
      const record = parsePinoLine(line);
      member.onLine?.(record);
      const shown = `${formatLine(line, { process: member.spec.name, colour: this.options.colour, readable: this.options.readable })}\n`;
      const important = record !== undefined && typeof record.level === 'number' && record.level >= LEVEL_VALUES.error;
      if (this.stopping && !important) member.drain.push(shown);
      else out.write(shown);
    };
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      pending += chunk;
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) emit(line);
    });
    stream.on('end', () => {
      if (pending) emit(pending);
      pending = '';
    });
  }

  /** Stops every process: SIGTERM, SIGKILL after the grace period; then one summary line. */
  stop(reason: string, code: number): void {
    if (this.stopping) return;
    this.stopping = { reason, code, startedAt: Date.now() };
    this.file.write(`[start] stopping (${reason})\n`);
    for (const member of this.members.values()) if (!member.exited) member.child.kill('SIGTERM');
    setTimeout(() => {
      for (const member of this.members.values()) {
        if (member.exited) continue;
        member.killed = true;
        member.child.kill('SIGKILL');
      }
    }, this.options.graceMs).unref();
    if ([...this.members.values()].every((m) => m.exited)) this.finish();
  }

  private onMemberExit(member: Member, code: number | null, signal: NodeJS.Signals | null): void {
    if (!this.stopping) {
      this.say(`${member.spec.name} exited (${signal ?? code}); stopping the others (log: ${this.logFile})`, 'error');
      this.stop(`${member.spec.name} exited`, 1);
    } else if (member.killed || (code !== 0 && code !== null) || (signal !== null && signal !== 'SIGTERM' && signal !== 'SIGINT')) {
      // Not a clean stop: show what it wrote while draining.
      for (const line of member.drain) this.stdout.write(line);
      this.say(member.killed ? `${member.spec.name} did not stop within ${this.options.graceMs / 1000} s: killed` : `${member.spec.name} stopped with ${signal ?? `exit code ${code}`}`, 'warn');
      if (this.stopping.code === 0) this.stopping.code = 1;
    }
    if ([...this.members.values()].every((m) => m.exited)) this.finish();
  }

  private finish(): void {
    if (this.finished) return;
    this.finished = true;
    const stopping = this.stopping!;
    const seconds = ((Date.now() - stopping.startedAt) / 1000).toFixed(1);
    const names = [...this.members.keys()];
    this.say(names.length ? `stopped ${names.join(', ')} in ${seconds} s (full log: ${this.logFile})` : 'nothing was running');
    this.file.end(() => this.options.onExit(stopping.code));
  }
}

async function answers200(url: string): Promise<boolean> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
    await res.body?.cancel();
    return res.status === 200;
  } catch {
    return false;
  }
}
