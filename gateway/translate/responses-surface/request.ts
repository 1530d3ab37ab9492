/**
 * A `/v1/responses` request as a chat-completions body (docs/inference-surfaces.md
 * "`POST /v1/responses`"). Translated where chat can say the same thing; fields that only steer the
 * Responses API's own storage or hosted features are accepted and ignored; what chat cannot carry
 * and the client would miss (stored state, unknown input items) is a 400 naming the field.
 *
 * | Responses | chat |
 * |---|---|
 * | `instructions`, `system` and `developer` messages | `system` messages; a run of them is merged into one (blank line between) |
 * | `user` / `assistant` messages | same role; assistant text parts joined into one string |
 * | content `input_text` / `output_text` / `text` / `refusal`, `input_image` (URL), `input_audio` | `text` parts, `image_url` parts, `input_audio` parts |
 * | `function_call`, `custom_tool_call` (a run of them, after an assistant message or not) | one assistant message's `tool_calls` (a custom call's `arguments` = `{"input": …}`) |
 * | `function_call_output`, `custom_tool_call_output` (string, or `input_text` / `input_image` parts) | `tool` message (texts joined by newlines); images go into one user message after the run of tool messages |
 * | `reasoning` items | dropped (a chat upstream takes no reasoning back) |
 * | `tools`, `tool_choice` | see `tools.ts` |
 * | `max_output_tokens`, `temperature`, `top_p`, `parallel_tool_calls`, `prompt_cache_key`, `user`, `reasoning_effort` | `max_tokens`, same names (forwarded per the route's `supported_params`) |
 * | `reasoning.effort` | `reasoning_effort` on routes that accept that value, else dropped ({@link softReasoningEffort}) |
 * | `text.format` `json_schema` / `json_object` | `response_format` |
 * | `store`, `include`, `metadata`, `client_metadata`, `service_tier`, `truncation`, `text.verbosity`, `reasoning.summary`, `safety_identifier`, `background: false` | ignored |
 * | `previous_response_id`, `conversation`, `background: true`, `item_reference` items, other item types | 400 (the gateway keeps no responses) |
 */
import { AppError } from '../../../lib/errors';
import { chatToolChoice, chatTools, type ToolNames } from './tools';

type Json = Record<string, unknown>;

function invalid(param: string, message: string): AppError {
  return new AppError('invalid_request', `Invalid field '${param}': ${message}`, { param });
}

/** The chat body of a responses request, the tool names that map back, and the soft reasoning effort. */
export interface TranslatedRequest {
  chat: Json;
  names: ToolNames;
  /** `reasoning.effort`: forwarded only to routes that accept it. */
  reasoningEffort: string | undefined;
}

function textOf(part: Json): string | undefined {
  if ((part.type === 'input_text' || part.type === 'output_text' || part.type === 'text') && typeof part.text === 'string') return part.text;
  if (part.type === 'refusal' && typeof part.refusal === 'string') return part.refusal;
  return undefined;
}

function contentPart(raw: unknown, where: string): Json {
  if (typeof raw === 'string') return { type: 'text', text: raw };
  const part = (raw ?? {}) as Json;
  const text = textOf(part);
  if (text !== undefined) return { type: 'text', text };
  if (part.type === 'input_image') {
    const url = typeof part.image_url === 'string' ? part.image_url : (part.image_url as Json | undefined)?.url;
    if (typeof url !== 'string') throw invalid(`${where}.image_url`, 'must be an image URL (file ids are not supported)');
    return { type: 'image_url', image_url: { url, ...(typeof part.detail === 'string' ? { detail: part.detail } : {}) } };
  }
  if (part.type === 'input_audio') {
    const audio = part.input_audio as Json | undefined;
    if (typeof audio?.data !== 'string' || typeof audio.format !== 'string') throw invalid(`${where}.input_audio`, 'must be an object with base64 data and a format');
    return { type: 'input_audio', input_audio: { data: audio.data, format: audio.format } };
  }
  throw invalid(`${where}.type`, `unsupported content part type ${JSON.stringify(part.type)}`);
}

const MEDIA_STAND_INS: Readonly<Record<string, Json>> = {
  input_image: { type: 'image_url', image_url: { url: '' } },
  input_audio: { type: 'input_audio', input_audio: { data: '', format: 'wav' } },
};

/**
 * For a body sent as it is to Responses-API routes (no chat translation): the chat stand-in's
 * user content, one placeholder part per `input_image` / `input_audio` part of the input (messages
 * and tool outputs), so routing admits only routes accepting those inputs (docs/routing.md "Input
 * modalities"). Never sent upstream.
 */
export function mediaStandIn(input: unknown): Json[] {
  const parts: Json[] = [];
  if (!Array.isArray(input)) return parts;
  for (const item of input) {
    if (item === null || typeof item !== 'object') continue;
    const list = (item as Json).content ?? (item as Json).output;
    if (!Array.isArray(list)) continue;
    for (const part of list) {
      const standIn = MEDIA_STAND_INS[(part as Json | null)?.type as string];
      if (standIn) parts.push(standIn);
    }
  }
  return parts;
}

function joinedText(parts: Json[], where: string): string {
  return parts.map((p, i) => {
    if (p.type !== 'text') throw invalid(`${where}[${i}]`, 'only text parts are allowed in this role');
    return p.text as string;
  }).join('');
}

/** Accumulates chat messages from input items, merging what chat wants merged. */
class MessageBuilder {
  readonly messages: Json[] = [];
  /** Images from tool outputs, sent as a user message once the run of tool messages ends. */
  private toolImages: Json[] = [];

  constructor(private readonly names: ToolNames) {}

  system(text: string): void {
    this.flushImages();
    const last = this.messages.at(-1);
    if (last?.role === 'system') last.content = `${last.content as string}\n\n${text}`;
    else this.messages.push({ role: 'system', content: text });
  }

  message(item: Json, where: string): void {
    const role = item.role;
    if (role !== 'user' && role !== 'assistant' && role !== 'system' && role !== 'developer') throw invalid(`${where}.role`, 'must be user, assistant, system or developer');
    let parts: Json[] | string;
    if (typeof item.content === 'string') parts = item.content;
    else if (Array.isArray(item.content)) parts = item.content.map((p: unknown, i) => contentPart(p, `${where}.content[${i}]`));
    else throw invalid(`${where}.content`, 'must be a string or a list of content parts');
    if (role === 'system' || role === 'developer') {
      this.system(typeof parts === 'string' ? parts : joinedText(parts, `${where}.content`));
      return;
    }
    this.flushImages();
    if (role === 'assistant') this.messages.push({ role, content: typeof parts === 'string' ? parts : joinedText(parts, `${where}.content`) });
    else this.messages.push({ role, content: parts });
  }

  toolCall(id: unknown, name: string, args: string, where: string): void {
    if (typeof id !== 'string' || id.length === 0) throw invalid(`${where}.call_id`, 'must be a non-empty string');
    this.flushImages();
    const call = { id, type: 'function', function: { name, arguments: args } };
    const last = this.messages.at(-1);
    if (last?.role === 'assistant') {
      last.tool_calls = [...((last.tool_calls as Json[] | undefined) ?? []), call];
      if (last.content === '') last.content = null;
    } else this.messages.push({ role: 'assistant', content: null, tool_calls: [call] });
  }

  functionCall(item: Json, where: string): void {
    if (typeof item.name !== 'string' || item.name.length === 0) throw invalid(`${where}.name`, 'must be a non-empty string');
    const namespace = typeof item.namespace === 'string' ? item.namespace : undefined;
    const args = typeof item.arguments === 'string' ? item.arguments : JSON.stringify(item.arguments ?? {});
    this.toolCall(item.call_id, this.names.chatName('function', item.name, namespace), args, where);
  }

  customCall(item: Json, where: string): void {
    if (typeof item.name !== 'string' || item.name.length === 0) throw invalid(`${where}.name`, 'must be a non-empty string');
    if (typeof item.input !== 'string') throw invalid(`${where}.input`, 'must be a string');
    this.toolCall(item.call_id, this.names.chatName('custom', item.name), JSON.stringify({ input: item.input }), where);
  }

  toolOutput(item: Json, where: string): void {
    if (typeof item.call_id !== 'string' || item.call_id.length === 0) throw invalid(`${where}.call_id`, 'must be a non-empty string');
    let content: string;
    if (typeof item.output === 'string') content = item.output;
    else if (Array.isArray(item.output)) {
      const texts: string[] = [];
      item.output.forEach((raw: unknown, i) => {
        const part = contentPart(raw, `${where}.output[${i}]`);
        if (part.type === 'text') texts.push(part.text as string);
        else this.toolImages.push(part);
      });
      content = texts.join('\n');
    } else throw invalid(`${where}.output`, 'must be a string or a list of content parts');
    this.messages.push({ role: 'tool', tool_call_id: item.call_id, content });
  }

  /** Ends the input: images held back from tool outputs go out. */
  finish(): Json[] {
    this.flushImages();
    return this.messages;
  }

  private flushImages(): void {
    if (this.toolImages.length === 0) return;
    this.messages.push({ role: 'user', content: this.toolImages });
    this.toolImages = [];
  }
}

function inputMessages(input: unknown, instructions: string | undefined, names: ToolNames): Json[] {
  const builder = new MessageBuilder(names);
  if (instructions !== undefined) builder.system(instructions);
  if (typeof input === 'string') {
    builder.message({ role: 'user', content: input }, 'input');
    return builder.finish();
  }
  if (!Array.isArray(input) || input.length === 0) throw invalid('input', 'must be a string or a non-empty list of items');
  input.forEach((raw: unknown, i) => {
    const where = `input[${i}]`;
    if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw invalid(where, 'must be an object');
    const item = raw as Json;
    switch (item.type) {
      case undefined:
      case 'message': builder.message(item, where); return;
      case 'function_call': builder.functionCall(item, where); return;
      case 'custom_tool_call': builder.customCall(item, where); return;
      case 'function_call_output':
      case 'custom_tool_call_output': builder.toolOutput(item, where); return;
      case 'reasoning': return;
      default: throw invalid(`${where}.type`, `unsupported input item type ${JSON.stringify(item.type)}`);
    }
  });
  const messages = builder.finish();
  if (messages.length === 0) throw invalid('input', 'has no message a chat model can read');
  return messages;
}

/** `text.format` as a chat `response_format` (docs/inference-surfaces.md "Structured output"); bad shapes are a 400 naming the field. */
function responseFormat(text: unknown): Json | undefined {
  if (text === undefined || text === null) return undefined;
  if (typeof text !== 'object' || Array.isArray(text)) throw invalid('text', 'must be an object');
  const format = (text as Json).format;
  if (format === undefined || format === null) return undefined;
  if (typeof format !== 'object' || Array.isArray(format)) throw invalid('text.format', 'must be an object with a type');
  const { type } = format as Json;
  if (type === 'text') return undefined;
  if (type === 'json_object') return { type: 'json_object' };
  if (type !== 'json_schema') throw invalid('text.format.type', 'must be one of text, json_object, json_schema');
  return jsonSchemaFormat(format as Json);
}

function jsonSchemaFormat(format: Json): Json {
  const { schema } = format;
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) throw invalid('text.format.schema', 'must be a JSON Schema object');
  const named: Json = { name: typeof format.name === 'string' && format.name.length > 0 ? format.name : 'response', schema };
  if (typeof format.strict === 'boolean') named.strict = format.strict;
  if (typeof format.description === 'string') named.description = format.description;
  return { type: 'json_schema', json_schema: named };
}

/** Fields copied as they are (the chat wire body forwards them per route). */
const SAME_NAME = ['temperature', 'top_p', 'parallel_tool_calls', 'prompt_cache_key', 'user', 'reasoning_effort'] as const;

/** Translates a responses request body; throws 400 naming the field for what chat cannot carry. */
export function responsesToChat(raw: unknown): TranslatedRequest {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new AppError('invalid_request', 'Request body must be a JSON object');
  const body = raw as Json;
  if (body.input === undefined) throw invalid('input', 'is required');
  for (const stateful of ['previous_response_id', 'conversation'] as const) {
    if (body[stateful] !== undefined && body[stateful] !== null) throw invalid(stateful, 'is not supported: the gateway keeps no responses (send the whole input)');
  }
  if (body.background === true) throw invalid('background', 'is not supported');
  if (body.instructions !== undefined && body.instructions !== null && typeof body.instructions !== 'string') throw invalid('instructions', 'must be a string');
  const { tools, names } = chatTools(body.tools);
  const messages = inputMessages(body.input, typeof body.instructions === 'string' ? body.instructions : undefined, names);
  const chat: Json = { model: body.model, messages, stream: body.stream };
  for (const key of SAME_NAME) if (body[key] !== undefined && body[key] !== null) chat[key] = body[key];
  if (body.max_output_tokens !== undefined && body.max_output_tokens !== null) chat.max_tokens = body.max_output_tokens;
  if (tools) chat.tools = tools;
  const toolChoice = chatToolChoice(body.tool_choice, names, tools !== undefined);
  if (toolChoice !== undefined) chat.tool_choice = toolChoice;
  const format = responseFormat(body.text);
  if (format) chat.response_format = format;
  const effort = ((body.reasoning ?? {}) as Json).effort;
  return { chat, names, reasoningEffort: typeof effort === 'string' ? effort : undefined };
}

/**
 * The chat body for one route with the soft `reasoning.effort` applied: set as `reasoning_effort`
 * when the route accepts that value (listed in `supported_params` and `reasoning_efforts`) and the
 * client gave no explicit `reasoning_effort`; otherwise the body as it is. Responses clients send an
 * effort with every request (Codex does), so a route without reasoning levels must not refuse it.
 */
export function softReasoningEffort(chat: Json, effort: string | undefined, route: { supportedParams: readonly string[]; reasoningEfforts: readonly string[] }): Json {
  if (effort === undefined || chat.reasoning_effort !== undefined) return chat;
  if (!route.supportedParams.includes('reasoning_effort') || !route.reasoningEfforts.includes(effort)) return chat;
  return { ...chat, reasoning_effort: effort };
}
