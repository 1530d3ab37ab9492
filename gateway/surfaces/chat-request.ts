/**
 * Validation of a chat-completions request body: only what the gateway relies on is checked here
 * (the wire-body rules filter and check the optional parameters); each error names the field.
 * Text hygiene (docs/security.md): the body is read with {@link FORWARDED_TEXT}, so message
 * content goes upstream as sent; `model`, which is logged and stored, must pass the text rule.
 */
import { AppError } from '../../lib/errors';
import type { JsonBodyOptions } from '../../lib/http/json-body';
import { describeTextProblem, textProblem } from '../../lib/text';

/**
 * How the inference surfaces read bodies: depth bounded, strings not walked (content is forwarded
 * unchanged and never stored; the fields that are logged are checked one by one).
 */
export const FORWARDED_TEXT: JsonBodyOptions = { text: 'forward' };

/** Throws a 400 naming `param` when a logged string field breaks the text rule. */
export function assertLoggableText(param: string, value: string): void {
  const problem = textProblem(value);
  if (problem) throw new AppError('invalid_request', `Invalid field '${param}': ${describeTextProblem(problem)}`, { param });
}

export interface ChatRequest {
  model: string;
  messages: unknown[];
  stream: boolean;
  /** The body as the client sent it (parameters are filtered per route when the wire body is built). */
  body: Record<string, unknown>;
  /**
   * The client field asking for a JSON Schema (`response_format` of type `json_schema`; the
   * responses surface names its `text.format`): only routes that declare
   * `supports_structured_output` may serve it. Absent: no schema asked (`json_object` is a hint
   * forwarded to those routes and dropped elsewhere, never a refusal).
   */
  structuredOutput?: string;
}

const RESPONSE_FORMAT_TYPES = new Set(['text', 'json_object', 'json_schema']);

/**
 * Checks a `response_format` (docs/inference-surfaces.md "Structured output") and says whether it
 * asks for a JSON Schema. The value itself is forwarded unchanged, never rebuilt.
 */
function asksForSchema(format: unknown): boolean {
  if (format === null || typeof format !== 'object' || Array.isArray(format)) throw invalid('response_format', 'must be an object with a type');
  const { type, json_schema: jsonSchema } = format as { type?: unknown; json_schema?: unknown };
  if (typeof type !== 'string' || !RESPONSE_FORMAT_TYPES.has(type)) throw invalid('response_format.type', `must be one of ${[...RESPONSE_FORMAT_TYPES].join(', ')}`);
  if (type !== 'json_schema') return false;
  if (jsonSchema === null || typeof jsonSchema !== 'object' || Array.isArray(jsonSchema)) throw invalid('response_format.json_schema', 'must be an object with a name and a schema');
  const { name, schema } = jsonSchema as { name?: unknown; schema?: unknown };
  if (typeof name !== 'string' || name.length === 0) throw invalid('response_format.json_schema.name', 'must be a non-empty string');
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) throw invalid('response_format.json_schema.schema', 'must be a JSON Schema object');
  return true;
}

const ROLES = new Set(['system', 'developer', 'user', 'assistant', 'tool', 'function']);

function invalid(param: string, message: string): AppError {
  return new AppError('invalid_request', `Invalid field '${param}': ${message}`, { param });
}

export function parseChatRequest(raw: unknown): ChatRequest {
  if (raw === undefined) throw new AppError('invalid_request', 'Request body is required (JSON with model and messages)');
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new AppError('invalid_request', 'Request body must be a JSON object');
  const body = raw as Record<string, unknown>;
  if (body.model === undefined) throw invalid('model', 'is required');
  if (typeof body.model !== 'string' || body.model.length === 0) throw invalid('model', 'must be a non-empty string');
  if (body.messages === undefined) throw invalid('messages', 'is required');
  if (!Array.isArray(body.messages) || body.messages.length === 0) throw invalid('messages', 'must be a non-empty array');
  body.messages.forEach((message: unknown, i) => {
    if (message === null || typeof message !== 'object' || Array.isArray(message)) throw invalid(`messages[${i}]`, 'must be an object');
    const { role, content } = message as { role?: unknown; content?: unknown };
    if (typeof role !== 'string' || !ROLES.has(role)) throw invalid(`messages[${i}].role`, `must be one of ${[...ROLES].join(', ')}`);
    if (content !== undefined && content !== null && typeof content !== 'string' && !Array.isArray(content)) {
      throw invalid(`messages[${i}].content`, 'must be a string, an array of content parts, or null');
    }
  });
  if (body.stream !== undefined && body.stream !== null && typeof body.stream !== 'boolean') throw invalid('stream', 'must be a boolean');
  for (const param of ['max_tokens', 'max_completion_tokens', 'temperature', 'top_p', 'n'] as const) {
    const value = body[param];
    if (value !== undefined && value !== null && (typeof value !== 'number' || !Number.isFinite(value))) throw invalid(param, 'must be a number');
  }
  if (typeof body.max_tokens === 'number' && body.max_tokens < 1) throw invalid('max_tokens', 'must be at least 1');
  const request: ChatRequest = { model: body.model, messages: body.messages as unknown[], stream: body.stream === true, body };
  // Requests without response_format pay one property read here.
  if (body.response_format !== undefined && body.response_format !== null && asksForSchema(body.response_format)) request.structuredOutput = 'response_format';
  return request;
}
