/**
 * The host runner's {@link QuestionChannel} (docs/agent-drivers.md "Native questions"): a native
 * CLI's question is written as a `question` event (storing it opens the question for the owner's
 * answer route), then the owner's answer is polled from the control-plane API until it comes, the
 * wait reaches its limit (the turn's deadline less a margin, so the CLI has time to go on), or the
 * turn ends. At the limit the question is expired through the API (an answer that came first
 * still wins). A `notice` tells the chat how the question ended.
 */
import type { HostApiClient, QuestionState } from './host-api-client';
import { AttemptNotCurrentError } from './host-api-client';
import { abortableSleep } from './retry-policy';
import type { EventSink, QuestionChannel, QuestionReply, QuestionRequest } from './types';

/** How often the owner's answer is looked for. */
export const QUESTION_POLL_MS = 1000;
/** Time left to the CLI after the wait: a question is expired this long before the turn's deadline. */
export const QUESTION_DEADLINE_MARGIN_MS = 30_000;

export interface HostQuestionChannelOptions {
  api: Pick<HostApiClient, 'questionState' | 'expireQuestion'>;
  attemptId: string;
  events: EventSink;
  /** The turn's deadline (epoch ms). */
  deadline: number;
  pollMs?: number;
  marginMs?: number;
}

const NO_ANSWER = 'The owner did not answer before the time limit of the turn; continue with your best judgment.';
const TURN_ENDED = 'The turn ended before the owner answered.';

export class HostQuestionChannel implements QuestionChannel {
  constructor(private readonly options: HostQuestionChannelOptions) {}

  async ask(request: QuestionRequest, signal: AbortSignal): Promise<QuestionReply> {
    const { api, attemptId, events } = this.options;
    await events.emit('question', { request_id: request.requestId, cli: request.cli, questions: request.questions });
    const until = this.options.deadline - (this.options.marginMs ?? QUESTION_DEADLINE_MARGIN_MS);
    let state: QuestionState | undefined;
    while (!signal.aborted) {
      if (Date.now() >= until) {
        state = await api.expireQuestion(attemptId, request.requestId);
        break;
      }
      try {
        state = await api.questionState(attemptId, request.requestId);
      } catch (err) {
        if (err instanceof AttemptNotCurrentError) throw err;
        state = undefined; // the API did not answer this time: look again
      }
      if (state && state.state !== 'pending') break;
      await abortableSleep(Math.min(this.options.pollMs ?? QUESTION_POLL_MS, Math.max(0, until - Date.now())), signal).catch(() => undefined);
    }
    const reply = replyOf(signal.aborted ? undefined : state);
    await events.emit('notice', { kind: `question_${reply.kind}`, request_id: request.requestId });
    return reply;
  }
}

function replyOf(state: QuestionState | undefined): QuestionReply {
  if (state?.state === 'answered' && state.answers) return { kind: 'answered', answers: state.answers };
  if (state?.state === 'declined') return { kind: 'declined', message: state.message ?? 'The owner declined to answer.' };
  return { kind: 'unanswered', message: state === undefined ? TURN_ENDED : NO_ANSWER };
}
