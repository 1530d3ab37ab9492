/**
 * A messages-surface request body translated into a chat-completions body (docs/inference-surfaces.md
 * "Messages surface"). Checked here: what the translation relies on (roles, block types, the
 * `tool_result` → `tool_use` link, `max_tokens`), each refusal a 400 naming the field. Text
 * content is not walked (it goes upstream as sent, like chat's; `model` is checked by the chat path).
 */
import { AppError } from '../../../lib/errors';
import { invalid } from './errors';
import { translateMessagesModel } from './model-name';
import { chatTools, chatToolChoice } from './tools';

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function text(block: Json, where: string): string {
  if (typeof block.text !== 'string') throw invalid(`${where}.text`, 'must be a string');
  return block.text;
}

/**
 * `system` (or a system turn's content): a string, or a list of text blocks joined with blank
 * lines (their `cache_control` marks are dropped: chat upstreams have none).
 */
function systemText(system: unknown, param = 'system'): string | undefined {
  if (system === undefined || system === null) return undefined;
  if (typeof system === 'string') return system;
  if (!Array.isArray(system)) throw invalid(param, 'must be a string or a list of text blocks');
  return system.map((block: unknown, i) => {
    const where = `${param}[${i}]`;
    if (!isObject(block) || block.type !== 'text') throw invalid(`${where}.type`, 'must be "text"');
    return text(block, where);
  }).join('\n\n');
}

/** An `image` block as a chat `image_url` part (base64 sources become data URLs). */
function imagePart(block: Json, where: string): Json {
  const source = block.source;
  if (!isObject(source)) throw invalid(`${where}.source`, 'must be an object');
  if (source.type === 'base64') {
    if (typeof source.media_type !== 'string' || !/^image\/[a-z0-9.+-]+$/i.test(source.media_type)) throw invalid(`${where}.source.media_type`, 'must be an image media type');
    if (typeof source.data !== 'string') throw invalid(`${where}.source.data`, 'must be a base64 string');
    return { type: 'image_url', image_url: { url: `data:${source.media_type};base64,${source.data}` } };
  }
  if (source.type === 'url') {
    if (typeof source.url !== 'string') throw invalid(`${where}.source.url`, 'must be a string');
    return { type: 'image_url', image_url: { url: source.url } };
  }
  throw invalid(`${where}.source.type`, 'must be "base64" or "url"');
}

/** What a translation collects on its way: tools a `tool_reference` loaded (deferred tools offered then). */
interface Walk {
  toolUses: Set<string>;
  referenced: Set<string>;
}

/**
 * A `tool_result`'s content as the chat `tool` message's text; its images go to `images`. A
 * `tool_reference` (a tool search loading a deferred tool) becomes the line `Tool loaded: <name>`
 * and marks that tool to be offered.
 */
function toolResultText(block: Json, where: string, images: Json[], walk: Walk): string {
  const content = block.content;
  let out = '';
  if (typeof content === 'string') out = content;
  else if (Array.isArray(content)) {
    const texts: string[] = [];
    content.forEach((part: unknown, i) => {
      const at = `${where}.content[${i}]`;
      if (!isObject(part)) throw invalid(at, 'must be a block object');
      if (part.type === 'text') texts.push(text(part, at));
      else if (part.type === 'image') images.push(imagePart(part, at));
      else if (part.type === 'tool_reference') {
        if (typeof part.tool_name !== 'string' || part.tool_name.length === 0) throw invalid(`${at}.tool_name`, 'must be a non-empty string');
        walk.referenced.add(part.tool_name);
        texts.push(`Tool loaded: ${part.tool_name}`);
      } else throw invalid(`${at}.type`, 'must be "text", "image" or "tool_reference"');
    });
    out = texts.join('\n');
  } else if (content !== undefined && content !== null) throw invalid(`${where}.content`, 'must be a string or a list of blocks');
  if (block.is_error !== undefined && typeof block.is_error !== 'boolean') throw invalid(`${where}.is_error`, 'must be a boolean');
  return block.is_error === true ? `Error: ${out}` : out;
}

/** A user turn: `tool` messages first (one per `tool_result`), then the rest as one user message. */
function userMessages(content: unknown[], where: string, walk: Walk): Json[] {
  const tools: Json[] = [];
  const parts: Json[] = [];
  content.forEach((block: unknown, i) => {
    const at = `${where}.content[${i}]`;
    if (!isObject(block)) throw invalid(at, 'must be a block object');
    if (block.type === 'text') parts.push({ type: 'text', text: text(block, at) });
    else if (block.type === 'image') parts.push(imagePart(block, at));
    else if (block.type === 'tool_result') {
      const id = block.tool_use_id;
      if (typeof id !== 'string' || !walk.toolUses.has(id)) throw invalid(`${at}.tool_use_id`, 'must name a tool_use block of an earlier assistant message');
      tools.push({ role: 'tool', tool_call_id: id, content: toolResultText(block, at, parts, walk) });
    } else throw invalid(`${at}.type`, 'must be one of text, image, tool_result in a user message');
  });
  if (parts.length > 0 || tools.length === 0) tools.push({ role: 'user', content: parts });
  return tools;
}

/** An assistant turn: text joined into `content`, `tool_use` as `tool_calls`; thinking dropped. */
function assistantMessage(content: unknown[], where: string, toolUses: Set<string>): Json {
  const texts: string[] = [];
  const calls: Json[] = [];
  content.forEach((block: unknown, i) => {
    const at = `${where}.content[${i}]`;
    if (!isObject(block)) throw invalid(at, 'must be a block object');
    if (block.type === 'text') texts.push(text(block, at));
    else if (block.type === 'tool_use') {
      if (typeof block.id !== 'string' || block.id.length === 0) throw invalid(`${at}.id`, 'must be a non-empty string');
      if (typeof block.name !== 'string' || block.name.length === 0) throw invalid(`${at}.name`, 'must be a non-empty string');
      if (!isObject(block.input)) throw invalid(`${at}.input`, 'must be an object');
      toolUses.add(block.id);
      calls.push({ id: block.id, type: 'function', function: { name: block.name, arguments: JSON.stringify(block.input) } });
    } else if (block.type !== 'thinking' && block.type !== 'redacted_thinking') {
      throw invalid(`${at}.type`, 'must be one of text, tool_use, thinking, redacted_thinking in an assistant message');
    }
  });
  const message: Json = { role: 'assistant', content: texts.length > 0 ? texts.join('') : null };
  if (calls.length > 0) message.tool_calls = calls;
  else if (message.content === null) message.content = '';
  return message;
}

/**
 * The structural checks every messages request passes, whatever serves it (a messages-API route
 * takes the body as sent, a chat route its translation): a non-empty `messages` list of objects
 * whose `role` is `user`, `assistant` or `system` (a system turn inside the conversation, as
 * coding clients send) and whose `content` is a string or a list.
 */
function checkMessages(messages: unknown): unknown[] {
  if (!Array.isArray(messages) || messages.length === 0) throw invalid('messages', 'must be a non-empty list');
  messages.forEach((message: unknown, i) => {
    const where = `messages[${i}]`;
    if (!isObject(message)) throw invalid(where, 'must be an object');
    const { role, content } = message;
    if (role !== 'user' && role !== 'assistant' && role !== 'system') throw invalid(`${where}.role`, 'must be "user", "assistant" or "system"');
    if (typeof content !== 'string' && !Array.isArray(content)) throw invalid(`${where}.content`, 'must be a string or a list of content blocks');
  });
  return messages;
}

function chatMessages(messages: unknown[], walk: Walk): Json[] {
  const out: Json[] = [];
  messages.forEach((message: unknown, i) => {
    const where = `messages[${i}]`;
    const { role, content } = message as { role: 'user' | 'assistant' | 'system'; content: string | unknown[] };
    if (role === 'system') {
      // A system turn keeps its place: chat upstreams take `system` messages anywhere.
      out.push({ role, content: systemText(content, `${where}.content`) });
      return;
    }
    if (typeof content === 'string') {
      out.push({ role, content });
      return;
    }
    if (role === 'user') out.push(...userMessages(content, where, walk));
    else out.push(assistantMessage(content, where, walk.toolUses));
  });
  return out;
}

function maxTokens(value: unknown): number {
  if (value === undefined || value === null) throw invalid('max_tokens', 'is required');
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) throw invalid('max_tokens', 'must be a positive integer');
  return value;
}

function stopSequences(value: unknown): string[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value) || !value.every((s) => typeof s === 'string')) throw invalid('stop_sequences', 'must be a list of strings');
  return value;
}

/** Optional numbers and flags copied under their chat names (the wire-body rules filter them per route). */
function copyParameters(body: Json, chat: Json): void {
  for (const key of ['temperature', 'top_p', 'top_k'] as const) {
    const value = body[key];
    if (value === undefined || value === null) continue;
    if (typeof value !== 'number' || !Number.isFinite(value)) throw invalid(key, 'must be a number');
    chat[key] = value;
  }
  if (body.metadata !== undefined && body.metadata !== null) {
    if (!isObject(body.metadata)) throw invalid('metadata', 'must be an object');
    const user = body.metadata.user_id;
    if (user !== undefined && user !== null && typeof user !== 'string') throw invalid('metadata.user_id', 'must be a string');
    if (typeof user === 'string') chat.user = user;
  }
}

/** A messages request as the surface serves it. */
export interface MessagesRequest {
  /** The body as the client sent it (a messages-API route gets it as sent). */
  body: Json;
  /** The gateway model id to look up (the client's name translated, docs "Model name"). */
  model: string;
  /** Its chat-completions translation (for chat routes, the request log and the prompt estimate). */
  chat: Json;
  /**
   * Set when the body passed the structural checks but has no chat translation (a block the
   * translation refuses): the 400 naming the field, raised only if a chat route is to serve it.
   * `chat` then carries the system and string contents only.
   */
  untranslatable?: AppError | undefined;
}

/**
 * Checks a messages request and translates it to chat. Refused at once with a 400 naming the
 * field: what no route could serve (not an object, `model`, `max_tokens` unless `countOnly`
 * (`count_tokens`), the `messages` structure, `stream`, `system`). A refusal of the translation
 * itself is kept in {@link MessagesRequest.untranslatable}.
 */
export function readMessagesRequest(raw: unknown, options: { countOnly?: boolean } = {}): MessagesRequest {
  if (raw === undefined) throw new AppError('invalid_request', 'Request body is required (JSON with model, max_tokens and messages)');
  if (!isObject(raw)) throw new AppError('invalid_request', 'Request body must be a JSON object');
  const body = raw;
  if (body.model === undefined) throw invalid('model', 'is required');
  if (typeof body.model !== 'string' || body.model.length === 0) throw invalid('model', 'must be a non-empty string');
  const max = options.countOnly ? undefined : maxTokens(body.max_tokens);
  const messages = checkMessages(body.messages);
  if (body.stream !== undefined && body.stream !== null && typeof body.stream !== 'boolean') throw invalid('stream', 'must be a boolean');
  const system = systemText(body.system);
  const model = translateMessagesModel(body.model);
  try {
    return { body, model, chat: translate(body, model, messages, system, max) };
  } catch (err) {
    if (!(err instanceof AppError) || err.status !== 400) throw err;
    const plain = messages.filter((m) => typeof (m as Json).content === 'string');
    const images = imageStandIn(messages);
    if (images) plain.push(images);
    const stand: Json = { model, messages: system === undefined ? plain : [{ role: 'system', content: system }, ...plain], stream: body.stream === true };
    if (max !== undefined) stand.max_tokens = max;
    if ((stand.messages as unknown[]).length === 0) stand.messages = [{ role: 'user', content: '' }];
    return { body, model, chat: stand, untranslatable: err };
  }
}

/**
 * For a body with no chat translation: one user message with a stand-in `image_url` part per
 * `image` block of the user turns (their `tool_result`s included), so routing still admits only
 * routes that accept images (docs/routing.md "Input modalities") and the log counts them. Never
 * sent upstream: such a body reaches messages-API routes only, as sent.
 */
function imageStandIn(messages: readonly unknown[]): Json | undefined {
  const parts: Json[] = [];
  const note = (blocks: unknown): void => {
    if (!Array.isArray(blocks)) return;
    for (const block of blocks) {
      if (!isObject(block)) continue;
      if (block.type === 'image') parts.push({ type: 'image_url', image_url: { url: '' } });
      else if (block.type === 'tool_result') note(block.content);
    }
  };
  for (const message of messages) if ((message as Json).role === 'user') note((message as Json).content);
  return parts.length > 0 ? { role: 'user', content: parts } : undefined;
}

/** The chat body of a messages request, or throws its first refusal (a 400 naming the field). */
export function messagesToChat(raw: unknown, options: { countOnly?: boolean } = {}): Json {
  const request = readMessagesRequest(raw, options);
  if (request.untranslatable) throw request.untranslatable;
  return request.chat;
}

function translate(body: Json, model: string, checked: unknown[], system: string | undefined, max: number | undefined): Json {
  const walk: Walk = { toolUses: new Set(), referenced: new Set() };
  const messages = chatMessages(checked, walk);
  if (system !== undefined) messages.unshift({ role: 'system', content: system });
  const chat: Json = { model, messages, stream: body.stream === true };
  if (max !== undefined) chat.max_tokens = max;
  const stop = stopSequences(body.stop_sequences);
  if (stop) chat.stop = stop;
  copyParameters(body, chat);
  const tools = chatTools(body.tools, walk.referenced);
  // Every tool left out (all server-side or deferred): no tools, and no choice among them.
  if (tools && tools.length > 0) chat.tools = tools;
  const choice = chatToolChoice(body.tool_choice);
  if (choice && (tools === undefined || tools.length > 0)) {
    chat.tool_choice = choice.choice;
    if (choice.parallel === false) chat.parallel_tool_calls = false;
  }
  return chat;
}
