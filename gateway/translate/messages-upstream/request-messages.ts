/**
 * Chat `messages` → the messages API's `system` and `messages`: system/developer messages become
 * `system`; user and assistant content becomes content blocks (text, images from `data:` or
 * http(s) URLs); assistant `tool_calls` become `tool_use` blocks; `tool` messages become
 * `tool_result` blocks in a user turn; consecutive turns of one role are merged (the messages API
 * wants roles to alternate). Empty text is dropped (the messages API refuses empty text blocks).
 */
import { AppError } from '../../../lib/errors';

type Block = Record<string, unknown>;

export interface TranslatedMessages {
  /** A string for one plain system message, else text blocks; `undefined` when there is none. */
  system: string | Block[] | undefined;
  messages: Array<{ role: 'user' | 'assistant'; content: Block[] }>;
}

const DATA_URL = /^data:([^;,]+);base64,(.*)$/s;

function invalid(param: string, message: string): AppError {
  return new AppError('invalid_request', `Invalid '${param}': ${message}`, { param });
}

/** Translates the chat messages; throws a 400 naming the offending field. */
export function messagesOf(value: unknown): TranslatedMessages {
  if (!Array.isArray(value)) throw invalid('messages', 'expected a list');
  const system: Block[] = [];
  let systemText: string | undefined;
  const out: TranslatedMessages['messages'] = [];
  for (let i = 0; i < value.length; i += 1) {
    const message = value[i] as { role?: unknown; content?: unknown; tool_calls?: unknown; tool_call_id?: unknown } | null;
    const path = `messages[${i}]`;
    if (message === null || typeof message !== 'object') throw invalid(path, 'expected an object');
    switch (message.role) {
      case 'system':
      case 'developer':
        if (system.length === 0 && typeof message.content === 'string') systemText = message.content;
        else systemText = undefined;
        system.push(...textBlocks(message.content, `${path}.content`));
        break;
      case 'user':
        append(out, 'user', contentBlocks(message.content, `${path}.content`, true));
        break;
      case 'assistant':
        append(out, 'assistant', [...contentBlocks(message.content, `${path}.content`, false), ...toolUseBlocks(message.tool_calls, `${path}.tool_calls`)]);
        break;
      case 'tool':
        append(out, 'user', [toolResult(message, path)]);
        break;
      default:
        throw invalid(`${path}.role`, `unsupported role ${JSON.stringify(message.role)}`);
    }
  }
  return { system: systemText ?? (system.length > 0 ? system : undefined), messages: out };
}

function append(out: TranslatedMessages['messages'], role: 'user' | 'assistant', blocks: Block[]): void {
  if (blocks.length === 0) return;
  const last = out[out.length - 1];
  if (last !== undefined && last.role === role) last.content.push(...blocks);
  else out.push({ role, content: blocks });
}

/** Text-only content (system messages, tool results): a string or text parts. */
function textBlocks(content: unknown, path: string): Block[] {
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }];
  if (content === null || content === undefined) return [];
  if (!Array.isArray(content)) throw invalid(path, 'expected a string or a list of content parts');
  const blocks: Block[] = [];
  content.forEach((part: unknown, j) => {
    const p = part as { type?: unknown; text?: unknown } | null;
    if (p === null || typeof p !== 'object' || p.type !== 'text' || typeof p.text !== 'string') throw invalid(`${path}[${j}]`, 'expected a text part');
    if (p.text !== '') blocks.push({ type: 'text', text: p.text });
  });
  return blocks;
}

/** User or assistant content: text parts, and (user only) `image_url` parts. */
function contentBlocks(content: unknown, path: string, images: boolean): Block[] {
  if (!Array.isArray(content)) return textBlocks(content, path);
  const blocks: Block[] = [];
  content.forEach((part: unknown, j) => {
    const p = part as { type?: unknown; text?: unknown; image_url?: unknown } | null;
    const at = `${path}[${j}]`;
    if (p !== null && typeof p === 'object' && p.type === 'text' && typeof p.text === 'string') {
      if (p.text !== '') blocks.push({ type: 'text', text: p.text });
    } else if (images && p !== null && typeof p === 'object' && p.type === 'image_url') {
      blocks.push(imageBlock(p.image_url, `${at}.image_url`));
    } else {
      throw invalid(`${at}.type`, `unsupported content part ${JSON.stringify(p?.type)}`);
    }
  });
  return blocks;
}

/** `data:<type>;base64,<data>` → a base64 source; `http(s)://…` → a url source. */
function imageBlock(imageUrl: unknown, path: string): Block {
  const url = typeof imageUrl === 'string' ? imageUrl : (imageUrl as { url?: unknown } | null)?.url;
  if (typeof url !== 'string') throw invalid(path, 'expected {url}');
  const data = DATA_URL.exec(url);
  if (data) return { type: 'image', source: { type: 'base64', media_type: data[1], data: data[2] } };
  if (/^https?:\/\//i.test(url)) return { type: 'image', source: { type: 'url', url } };
  throw invalid(`${path}.url`, 'expected a base64 data: URL or an http(s) URL');
}

function toolUseBlocks(calls: unknown, path: string): Block[] {
  if (calls === undefined || calls === null) return [];
  if (!Array.isArray(calls)) throw invalid(path, 'expected a list');
  return calls.map((call: unknown, k) => {
    const c = call as { id?: unknown; function?: { name?: unknown; arguments?: unknown } } | null;
    if (c === null || typeof c !== 'object' || typeof c.id !== 'string' || typeof c.function?.name !== 'string') {
      throw invalid(`${path}[${k}]`, 'expected {id, function: {name, arguments}}');
    }
    return { type: 'tool_use', id: c.id, name: c.function.name, input: toolInput(c.function.arguments, `${path}[${k}].function.arguments`) };
  });
}

/** Tool-call arguments (JSON text of an object) → the `input` object; empty text is `{}`. */
function toolInput(args: unknown, path: string): unknown {
  if (args === undefined || args === null || args === '') return {};
  if (typeof args === 'object') return args;
  if (typeof args !== 'string') throw invalid(path, 'expected JSON text');
  try {
    const input = JSON.parse(args) as unknown;
    if (input !== null && typeof input === 'object' && !Array.isArray(input)) return input;
  } catch {
    // reported below
  }
  throw invalid(path, 'expected the JSON text of an object');
}

function toolResult(message: { tool_call_id?: unknown; content?: unknown }, path: string): Block {
  if (typeof message.tool_call_id !== 'string') throw invalid(`${path}.tool_call_id`, 'expected a string');
  const content = typeof message.content === 'string' ? message.content : textBlocks(message.content, `${path}.content`);
  return { type: 'tool_result', tool_use_id: message.tool_call_id, content };
}
