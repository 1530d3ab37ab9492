/**
 * Native questions (issue 26; docs/agent-drivers.md
 * "Native questions"): a native CLI asks the chat's owner during an attempt. The host writes a
 * `question` event (its storing opens the question: {@link openQuestions}, in the ingest's
 * transaction) and polls the question's state; the owner lists the chat's questions and answers one
 * naming the job, the attempt and the CLI's request id. An answer is taken once, and only while the
 * attempt is the turn's running one: a finished, abandoned or replaced attempt is refused (409).
 */
import { z } from 'zod';
import type { Db } from '../../lib/db';
import { AppError } from '../../lib/errors';
import { QUESTION_LIMITS, type QUESTION_STATES, type questionEventPayload } from '../../lib/contracts/host-api';

type Trx = Parameters<Parameters<Db['transaction']>[0]>[0];
type QuestionPayload = z.infer<typeof questionEventPayload>;
type QuestionState = (typeof QUESTION_STATES)[number];

interface QuestionRow {
  attempt_id: string;
  request_id: string;
  job_id: string;
  turn_seq: number;
  cli: string;
  questions: QuestionPayload['questions'];
  state: QuestionState;
  answers: Record<string, string[]> | null;
  message: string | null;
  created_at: Date;
  answered_at: Date | null;
}

/** Opens the questions of stored `question` events (a retried batch opens nothing twice). */
export async function openQuestions(trx: Trx, attempt: { jobId: string; turnSeq: number; attemptId: string }, payloads: QuestionPayload[]): Promise<void> {
  if (payloads.length === 0) return;
  await trx('agent_native_questions').insert(payloads.map((p) => ({
    attempt_id: attempt.attemptId, request_id: p.request_id, job_id: attempt.jobId, turn_seq: attempt.turnSeq,
    cli: p.cli, questions: JSON.stringify(p.questions),
  }))).onConflict(['attempt_id', 'request_id']).ignore();
}

export interface QuestionStateView {
  state: QuestionState;
  answers: Record<string, string[]> | null;
  message: string | null;
}

function stateView(row: Pick<QuestionRow, 'state' | 'answers' | 'message'>): QuestionStateView {
  return { state: row.state, answers: row.answers, message: row.message };
}

/** The host's attempt, running: else 409 `Attempt is not current` (as every attempt route). */
async function lockHostAttempt(trx: Trx, hostId: string, attemptId: string): Promise<void> {
  const attempt = await trx('agent_attempts').where({ attempt_id: attemptId }).forShare().first<{ host_id: string; state: string } | undefined>('host_id', 'state');
  if (!attempt || attempt.host_id !== hostId || attempt.state !== 'running') throw new AppError('conflict', 'Attempt is not current');
}

/** The question's state for the host that asked it (404 when it was never opened). */
export async function hostQuestionState(db: Db, options: { hostId: string; attemptId: string; requestId: string; expire: boolean }): Promise<QuestionStateView> {
  return db.transaction(async (trx) => {
    await lockHostAttempt(trx, options.hostId, options.attemptId);
    const key = { attempt_id: options.attemptId, request_id: options.requestId };
    const row = await trx('agent_native_questions').where(key).forUpdate().first<QuestionRow | undefined>('state', 'answers', 'message');
    if (!row) throw new AppError('not_found', 'Question not found');
    if (!options.expire || row.state !== 'pending') return stateView(row);
    await trx('agent_native_questions').where(key).update({ state: 'expired', answered_at: trx.fn.now() });
    return { state: 'expired', answers: null, message: null };
  });
}

/** One question as its owner sees it. */
export interface OwnerQuestionView {
  job_id: string;
  turn_seq: number;
  attempt_id: string;
  request_id: string;
  cli: string;
  questions: QuestionPayload['questions'];
  /** `pending` only while the attempt runs: a question of an attempt that ended unanswered reads `expired`. */
  state: QuestionState;
  answers: Record<string, string[]> | null;
  message: string | null;
  created_at: string;
  answered_at: string | null;
}

const LIST_LIMIT = 100;

/** The chat's questions, newest first (at most 100; `pending: true`: only those waiting for the owner). */
export async function listJobQuestions(db: Db, jobId: string, options: { pending: boolean }): Promise<OwnerQuestionView[]> {
  const rows = await db('agent_native_questions as q')
    .join('agent_attempts as a', 'a.attempt_id', 'q.attempt_id')
    .where('q.job_id', jobId)
    .modify((query) => {
      if (options.pending) void query.where('q.state', 'pending').where('a.state', 'running');
    })
    .orderBy('q.created_at', 'desc').orderBy('q.request_id', 'desc')
    .limit(LIST_LIMIT)
    .select<Array<QuestionRow & { attempt_state: string }>>('q.*', 'a.state as attempt_state');
  return rows.map((r) => ({
    job_id: r.job_id, turn_seq: r.turn_seq, attempt_id: r.attempt_id, request_id: r.request_id, cli: r.cli, questions: r.questions,
    state: r.state === 'pending' && r.attempt_state !== 'running' ? 'expired' : r.state,
    answers: r.answers, message: r.message, created_at: r.created_at.toISOString(), answered_at: r.answered_at?.toISOString() ?? null,
  }));
}

const answerText = z.string().min(1).max(QUESTION_LIMITS.text);

/**
 * The owner's reply: `answers` (question id → one or more strings: chosen labels or free text) or
 * `decline` (with an optional message the CLI passes to its model).
 */
export const answerSchema = z.union([
  z.object({ answers: z.record(z.string().max(QUESTION_LIMITS.text), z.array(answerText).min(1).max(QUESTION_LIMITS.options)) }).strict(),
  z.object({ decline: z.literal(true), message: z.string().max(QUESTION_LIMITS.text).optional() }).strict(),
]);
export type AnswerBody = z.infer<typeof answerSchema>;

const DEFAULT_DECLINE = 'The owner declined to answer.';

/**
 * Takes the owner's reply to one question of their chat. 404 `Question not found` (unknown, or not
 * this chat's); 409 when the attempt is no longer the turn's running one (`Attempt is not current`:
 * stale or replaced) or the question was already answered, declined or expired; 400 for an answer
 * naming a question the request did not ask or answering none.
 */
export async function answerQuestion(db: Db, options: { jobId: string; attemptId: string; requestId: string; ownerId: number; body: AnswerBody }): Promise<OwnerQuestionView> {
  const { jobId, attemptId, requestId, body } = options;
  return db.transaction(async (trx) => {
    const key = { attempt_id: attemptId, request_id: requestId };
    const found = await trx('agent_native_questions').where({ ...key, job_id: jobId }).first<QuestionRow | undefined>('attempt_id');
    if (!found) throw new AppError('not_found', 'Question not found');
    // The attempt first (as the host's routes and the attempt's finish lock it), then the question.
    const attempt = await trx('agent_attempts').where({ attempt_id: attemptId }).forShare().first<{ state: string } | undefined>('state');
    if (attempt?.state !== 'running') throw new AppError('conflict', 'Attempt is not current: the turn it asked in has ended or moved to another attempt');
    const row = (await trx('agent_native_questions').where(key).forUpdate().first<QuestionRow>());
    if (row.state !== 'pending') throw new AppError('conflict', `Question is already ${row.state}`);
    let update: Record<string, unknown>;
    if ('answers' in body) {
      const ids = new Set(row.questions.map((q) => q.id));
      const given = Object.keys(body.answers);
      if (given.length === 0) throw new AppError('invalid_request', "Invalid field 'answers': answer at least one question", { param: 'answers' });
      const unknown = given.find((id) => !ids.has(id));
      if (unknown !== undefined) throw new AppError('invalid_request', `Invalid field 'answers': the request asked no question with id ${JSON.stringify(unknown.slice(0, 200))}`, { param: 'answers' });
      update = { state: 'answered', answers: JSON.stringify(body.answers) };
    } else {
      update = { state: 'declined', message: body.message?.trim() || DEFAULT_DECLINE };
    }
    const [updated] = await trx('agent_native_questions').where(key)
      .update({ ...update, answered_by: options.ownerId, answered_at: trx.fn.now() })
      .returning<QuestionRow[]>('*');
    return {
      job_id: updated!.job_id, turn_seq: updated!.turn_seq, attempt_id: updated!.attempt_id, request_id: updated!.request_id, cli: updated!.cli,
      questions: updated!.questions, state: updated!.state, answers: updated!.answers, message: updated!.message,
      created_at: updated!.created_at.toISOString(), answered_at: updated!.answered_at?.toISOString() ?? null,
    };
  });
}
