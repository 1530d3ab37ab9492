/**
 * What the prompt-rewrite model is asked and how its answer is read (docs/agent-grants.md): the request
 * body schema, the system prompts (strict JSON out), the chat messages, and the parsing of the
 * model's reply into 2 to 4 questions or one rewritten prompt of at most 32,000 characters.
 * A reply that breaks these rules is refused (502), never repaired or cut.
 */
import { z } from 'zod';
import { AppError } from '../../lib/errors';

export const MAX_PROMPT_CHARS = 32_000;
export const MAX_ANSWERS = 4;
export const MIN_QUESTIONS = 2;
export const MAX_QUESTIONS = 4;
/** Longest question or answer accepted in `answers`, and longest question accepted from the model. */
export const MAX_QA_CHARS = 2_000;

export const rewriteRequestSchema = z.object({
  prompt: z.string().trim().min(1, 'must not be empty').max(MAX_PROMPT_CHARS, `must be at most ${MAX_PROMPT_CHARS} characters`),
  model: z.string().min(1).max(200),
  clarify: z.boolean().optional(),
  answers: z.array(z.object({
    question: z.string().trim().min(1).max(MAX_QA_CHARS),
    answer: z.string().trim().min(1).max(MAX_QA_CHARS),
  }).strict()).max(MAX_ANSWERS, `must hold at most ${MAX_ANSWERS} answers`).optional(),
}).strict();

export type RewriteRequest = z.infer<typeof rewriteRequestSchema>;

export type RewriteResult = { questions: string[] } | { prompt: string };

/** Whether the request asks for clarification questions (clarify set, no answers given). */
export function wantsQuestions(request: RewriteRequest): boolean {
  return request.clarify === true && (request.answers === undefined || request.answers.length === 0);
}

const CLARIFY_SYSTEM = [
  'You help a user prepare a task for an autonomous coding agent.',
  `Read the draft prompt and ask ${MIN_QUESTIONS} to ${MAX_QUESTIONS} short clarification questions whose answers would most improve the task.`,
  'Reply with strict JSON only (no prose, no code fences) of exactly this shape: {"questions": ["...", "..."]}',
].join(' ');

const REWRITE_SYSTEM = [
  'You rewrite a draft prompt into a complete, self-contained task description for an autonomous coding agent:',
  'the goal, the relevant context, constraints, and how to tell the task is done.',
  'Keep every requirement of the draft, use the answers to clarification questions when given, and do not invent facts.',
  `The rewritten prompt must be at most ${MAX_PROMPT_CHARS} characters.`,
  'Reply with strict JSON only (no prose, no code fences) of exactly this shape: {"prompt": "..."}',
].join(' ');

/** The chat-completions body sent to the gateway for a request. */
export function rewriteChatBody(request: RewriteRequest): Record<string, unknown> {
  const questions = wantsQuestions(request);
  const user = JSON.stringify({ draft_prompt: request.prompt, ...(questions ? {} : { answers: request.answers ?? [] }) });
  return {
    model: request.model,
    messages: [{ role: 'system', content: questions ? CLARIFY_SYSTEM : REWRITE_SYSTEM }, { role: 'user', content: user }],
    response_format: { type: 'json_object' },
    max_tokens: questions ? 1024 : 16_384,
    stream: false,
  };
}

function badOutput(reason: string): AppError {
  return new AppError('upstream_error', `The model's reply could not be used: ${reason}`);
}

/** The JSON object of a reply; a single surrounding code fence is tolerated. */
function replyObject(content: unknown): Record<string, unknown> {
  if (typeof content !== 'string' || content.trim() === '') throw badOutput('it is empty');
  const text = content.trim().replace(/^```(?:json)?\s*\n?([\s\S]*?)\n?```$/i, '$1').trim();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw badOutput('it is not valid JSON');
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw badOutput('it is not a JSON object');
  return parsed as Record<string, unknown>;
}

/** Reads the model's message content as the answer to `request`, or 502. */
export function parseRewriteReply(request: RewriteRequest, content: unknown): RewriteResult {
  const reply = replyObject(content);
  if (wantsQuestions(request)) {
    const questions = reply.questions;
    if (!Array.isArray(questions) || !questions.every((q) => typeof q === 'string' && q.trim() !== '')) {
      throw badOutput('"questions" must be a list of non-empty strings');
    }
    const cleaned = (questions as string[]).map((q) => q.trim());
    if (cleaned.length < MIN_QUESTIONS || cleaned.length > MAX_QUESTIONS) {
      throw badOutput(`it asked ${cleaned.length} questions; ${MIN_QUESTIONS} to ${MAX_QUESTIONS} are required`);
    }
    if (cleaned.some((q) => q.length > MAX_QA_CHARS)) throw badOutput(`a question is longer than ${MAX_QA_CHARS} characters`);
    return { questions: cleaned };
  }
  const prompt = reply.prompt;
  if (typeof prompt !== 'string' || prompt.trim() === '') throw badOutput('"prompt" must be a non-empty string');
  const trimmed = prompt.trim();
  if (trimmed.length > MAX_PROMPT_CHARS) throw badOutput(`the rewritten prompt has ${trimmed.length} characters; at most ${MAX_PROMPT_CHARS} are allowed`);
  return { prompt: trimmed };
}
