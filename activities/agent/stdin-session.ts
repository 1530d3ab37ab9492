/**
 * A native CLI run driven over its stdin and stdout (docs/agent-drivers.md "Native questions"): the
 * driver writes an opening line, reads every stdout line, and writes replies (a question's answer)
 * on a stdin that stays open until the session ends it. Shared by Codex's app-server client and
 * Claude Code's stream-json session. Questions are asked without blocking the stream; those still
 * open when the process ends are answered "no answer" ({@link StdinSession.settle}).
 */
import type { CliLine, SplitLine } from './cli-lines';
import type { NativeRun } from './native-lines';
import { NO_CHANNEL_REPLY, type QuestionChannel, type QuestionReply, type QuestionRequest, type StdinWriter } from './types';

/** What the native driver runs a session with (native-driver.ts). */
export interface NativeProtocol {
  /** The first stdin line(s). */
  opening(): string;
  /** Stdin, open for the rest of the run. */
  open(writer: StdinWriter): void;
  /** One stdout line: the events it makes (replies are written to stdin). */
  line(split: SplitLine): CliLine[];
  /** After the process ended (or failed): open questions answered, the run's failure named. */
  settle(stderr?: string): Promise<void>;
}

export interface StdinSessionOptions {
  /** Where questions go; absent: each is answered "no answer" at once. */
  questions?: QuestionChannel;
  /** The turn's signal: aborting it ends the wait for an answer. */
  signal: AbortSignal;
}

export abstract class StdinSession implements NativeProtocol {
  private writer: StdinWriter | undefined;
  private readonly queued: string[] = [];
  private ended = false;
  private readonly asking = new Set<Promise<void>>();
  private readonly stopAsking = new AbortController();

  constructor(protected readonly run: NativeRun, protected readonly session: StdinSessionOptions) {}

  abstract opening(): string;
  abstract line(split: SplitLine): CliLine[];

  open(writer: StdinWriter): void {
    this.writer = writer;
    for (const text of this.queued.splice(0)) writer.write(text);
    if (this.ended) writer.end();
  }

  async settle(_stderr?: string): Promise<void> {
    this.stopAsking.abort();
    await Promise.all([...this.asking]);
  }

  /** Writes a line to stdin (queued until stdin is open). */
  protected write(text: string): void {
    if (this.writer) this.writer.write(text);
    else this.queued.push(text);
  }

  /** Closes stdin (the CLI then exits). */
  protected end(): void {
    this.ended = true;
    this.writer?.end();
  }

  /**
   * Asks the owner without blocking the stream; `answer` writes the reply. A question that cannot
   * be asked (no channel, no readable question, a failed ask) is answered "no answer".
   */
  protected ask(request: QuestionRequest | undefined, answer: (reply: QuestionReply) => void): void {
    const channel = this.session.questions;
    const task = (async () => {
      let reply: QuestionReply;
      if (!channel) reply = NO_CHANNEL_REPLY;
      else if (!request) reply = { kind: 'unanswered', message: 'The question could not be read; continue with your best judgment.' };
      else {
        try {
          reply = await channel.ask(request, AbortSignal.any([this.session.signal, this.stopAsking.signal]));
        } catch (err) {
          reply = { kind: 'unanswered', message: `The question could not be asked (${err instanceof Error ? err.message.slice(0, 200) : 'error'}).` };
        }
      }
      answer(reply);
    })();
    this.asking.add(task);
    void task.finally(() => this.asking.delete(task));
  }
}
