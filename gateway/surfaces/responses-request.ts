/**
 * Translates a `/v1/responses` request into a chat-completions body: `instructions` → a system
 * message; `input` (a string, or message / function_call / function_call_output items) →
 * `messages`; function tools and `tool_choice`; `max_output_tokens` → `max_tokens`. Other item
 * and tool types are refused with 400 (this gateway serves them only through chat-compatible routes).
 */
import { AppError } from '../../lib/errors';

type Json = Record<string, unknown>;

function invalid(param: string, message: string): AppError {
  return new AppError('invalid_request', `Invalid field '${param}': ${message}`, { param });
}

function contentPart(part: unknown, where: string): Json {
  if (typeof part === 'string') return { type: 'text', text: part };
  const p = (part ?? {}) as Json;
  if ((p.type === 'input_text' || p.type === 'output_text' || p.type === 'text') && typeof p.text === 'string') return { type: 'text', text: p.text };
  if (p.type === 'input_image' && typeof p.image_url === 'string') return { type: 'image_url', image_url: { url: p.image_url } };
  throw invalid(where, `unsupported content part type ${JSON.stringify(p.type)}`);
}

function messageItem(item: Json, where: string): Json {
  const role = item.role;
  if (role !== 'user' && role !== 'assistant' && role !== 'system' && role !== 'developer') throw invalid(`${where}.role`, 'must be user, assistant, system or developer');
  const content = typeof item.content === 'string'
    ? item.content
    : Array.isArray(item.content) ? item.content.map((p, i) => contentPart(p, `${where}.content[${i}]`)) : undefined;
  if (content === undefined) throw invalid(`${where}.content`, 'must be a string or a list of content parts');
  return { role, content };
}

function inputMessages(input: unknown): Json[] {
  if (typeof input === 'string') return [{ role: 'user', content: input }];
  if (!Array.isArray(input) || input.length === 0) throw invalid('input', 'must be a string or a non-empty list of items');
  return input.map((raw, i) => {
    const item = (raw ?? {}) as Json;
    const where = `input[${i}]`;
    if (item.type === undefined || item.type === 'message') return messageItem(item, where);
    if (item.type === 'function_call') {
      return { role: 'assistant', content: null, tool_calls: [{ id: item.call_id, type: 'function', function: { name: item.name, arguments: item.arguments } }] };
    }
    if (item.type === 'function_call_output') return { role: 'tool', tool_call_id: item.call_id, content: typeof item.output === 'string' ? item.output : JSON.stringify(item.output) };
    throw invalid(`${where}.type`, `unsupported input item type ${JSON.stringify(item.type)}`);
  });
}

function chatTools(tools: unknown): Json[] | undefined {
  if (tools === undefined) return undefined;
  if (!Array.isArray(tools)) throw invalid('tools', 'must be a list');
  return tools.map((raw, i) => {
    const tool = (raw ?? {}) as Json;
    if (tool.type !== 'function' || typeof tool.name !== 'string') throw invalid(`tools[${i}]`, 'only function tools with a name are supported');
    return { type: 'function', function: { name: tool.name, description: tool.description, parameters: tool.parameters } };
  });
}

function chatToolChoice(choice: unknown): unknown {
  if (choice === undefined || typeof choice === 'string') return choice;
  const c = choice as Json;
  if (c.type === 'function' && typeof c.name === 'string') return { type: 'function', function: { name: c.name } };
  throw invalid('tool_choice', 'must be auto, none, required or {type: "function", name}');
}

/** The chat body for a responses request (validated again by the chat request parser). */
export function responsesToChat(raw: unknown): Json {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new AppError('invalid_request', 'Request body must be a JSON object');
  const body = raw as Json;
  if (body.input === undefined) throw invalid('input', 'is required');
  const messages = inputMessages(body.input);
  if (body.instructions !== undefined) {
    if (typeof body.instructions !== 'string') throw invalid('instructions', 'must be a string');
    messages.unshift({ role: 'system', content: body.instructions });
  }
  const chat: Json = { model: body.model, messages, stream: body.stream };
  for (const key of ['temperature', 'top_p', 'reasoning_effort'] as const) if (body[key] !== undefined) chat[key] = body[key];
  if (body.max_output_tokens !== undefined) chat.max_tokens = body.max_output_tokens;
  const tools = chatTools(body.tools);
  if (tools) chat.tools = tools;
  const toolChoice = chatToolChoice(body.tool_choice);
  if (toolChoice !== undefined) chat.tool_choice = toolChoice;
  return chat;
}
