/**
 * Responses-API `tools` and `tool_choice` as chat-completions function tools
 * (docs/inference-surfaces.md "`POST /v1/responses`"). A tool a client merely offers is never a
 * 400: what a chat upstream can call faithfully is translated, the rest is left out.
 *
 * | Responses tool | chat function | its calls come back as |
 * |---|---|---|
 * | `function` | the same function | `function_call` |
 * | `namespace` (`name`, `tools: [function…]`) | each function, named `<namespace>__<name>` | `function_call` with `name` and `namespace` |
 * | `custom` (freeform, optional `format`) | a function of one string argument `input` | `custom_tool_call` with `input` |
 * | anything else (`web_search`, `file_search`, `local_shell`, `image_generation`, `computer_use*`, `mcp`, `code_interpreter`, `tool_search`, unknown types) | left out | — |
 *
 * A chat function name is at most {@link MAX_FUNCTION_NAME} characters: a composed name that is
 * longer, or that collides with another tool's name, becomes its first 55 characters, `_` and 8 hex
 * digits of its SHA-256. Every chat name maps back through {@link ToolNames}.
 */
import { createHash } from 'node:crypto';
import { AppError } from '../../../lib/errors';

type Json = Record<string, unknown>;

/** The longest function name chat-completions APIs accept. */
export const MAX_FUNCTION_NAME = 64;

/** The client's tool behind a chat function name. */
export interface OfferedTool {
  type: 'function' | 'custom';
  name: string;
  /** The `namespace` tool the function came from. */
  namespace?: string;
}

function invalid(param: string, message: string): AppError {
  return new AppError('invalid_request', `Invalid field '${param}': ${message}`, { param });
}

function composedName(name: string, namespace: string | undefined): string {
  return namespace === undefined ? name : `${namespace}__${name}`;
}

function shortened(name: string): string {
  const digest = createHash('sha256').update(name).digest('hex').slice(0, 8);
  return `${name.slice(0, MAX_FUNCTION_NAME - 9)}_${digest}`;
}

/** The two-way map between chat function names and the client's tools of one request. */
export class ToolNames {
  private readonly byChat = new Map<string, OfferedTool>();
  private readonly toChat = new Map<string, string>();

  /** Registers a tool and answers its chat name (see the file comment for the length rule). */
  add(tool: OfferedTool): string {
    const key = composedName(tool.name, tool.namespace);
    const known = this.toChat.get(`${tool.type}\n${key}`);
    if (known !== undefined) return known;
    let chat = key;
    if (tool.namespace !== undefined && (chat.length > MAX_FUNCTION_NAME || this.byChat.has(chat))) chat = shortened(key);
    this.byChat.set(chat, tool);
    this.toChat.set(`${tool.type}\n${key}`, chat);
    return chat;
  }

  /** The chat name of a client tool (composed as {@link add} would when the tool was not offered). */
  chatName(type: OfferedTool['type'], name: string, namespace?: string): string {
    const key = composedName(name, namespace);
    const known = this.toChat.get(`${type}\n${key}`);
    if (known !== undefined) return known;
    return namespace !== undefined && key.length > MAX_FUNCTION_NAME ? shortened(key) : key;
  }

  /** The client's tool behind a chat name; an unknown name is a plain function of that name. */
  offered(chatName: string): OfferedTool {
    return this.byChat.get(chatName) ?? { type: 'function', name: chatName };
  }
}

function describedFunction(name: string, description: unknown, parameters: unknown, strict: unknown): Json {
  const fn: Json = { name, parameters: parameters ?? { type: 'object', properties: {} } };
  if (typeof description === 'string') fn.description = description;
  if (typeof strict === 'boolean') fn.strict = strict;
  return { type: 'function', function: fn };
}

function functionTool(tool: Json, where: string, names: ToolNames, namespace?: string): Json {
  if (typeof tool.name !== 'string' || tool.name.length === 0) throw invalid(`${where}.name`, 'must be a non-empty string');
  if (tool.parameters !== undefined && tool.parameters !== null && (typeof tool.parameters !== 'object' || Array.isArray(tool.parameters))) {
    throw invalid(`${where}.parameters`, 'must be a JSON schema object');
  }
  const chat = names.add({ type: 'function', name: tool.name, ...(namespace === undefined ? {} : { namespace }) });
  return describedFunction(chat, tool.description, tool.parameters, tool.strict);
}

/** What the `input` argument of a freeform tool says about its format (a grammar is quoted whole). */
function inputDescription(format: unknown): string {
  const f = (format ?? {}) as Json;
  if (f.type === 'grammar' && typeof f.definition === 'string') {
    const syntax = typeof f.syntax === 'string' ? f.syntax : 'grammar';
    return `The raw input of this tool (not JSON-encoded), matching this ${syntax} grammar:\n${f.definition}`;
  }
  return 'The raw input of this tool, as free-form text.';
}

function customTool(tool: Json, where: string, names: ToolNames): Json {
  if (typeof tool.name !== 'string' || tool.name.length === 0) throw invalid(`${where}.name`, 'must be a non-empty string');
  const chat = names.add({ type: 'custom', name: tool.name });
  const parameters = {
    type: 'object',
    properties: { input: { type: 'string', description: inputDescription(tool.format) } },
    required: ['input'],
    additionalProperties: false,
  };
  return describedFunction(chat, tool.description, parameters, undefined);
}

/** The chat `tools` of a request (`undefined` when none remain) and the names that map back. */
export function chatTools(tools: unknown): { tools: Json[] | undefined; names: ToolNames } {
  const names = new ToolNames();
  if (tools === undefined || tools === null) return { tools: undefined, names };
  if (!Array.isArray(tools)) throw invalid('tools', 'must be a list');
  const out: Json[] = [];
  tools.forEach((raw: unknown, i) => {
    const where = `tools[${i}]`;
    if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw invalid(where, 'must be an object');
    const tool = raw as Json;
    if (tool.type === 'function') out.push(functionTool(tool, where, names));
    else if (tool.type === 'custom') out.push(customTool(tool, where, names));
    else if (tool.type === 'namespace') {
      if (typeof tool.name !== 'string' || tool.name.length === 0) throw invalid(`${where}.name`, 'must be a non-empty string');
      if (!Array.isArray(tool.tools)) throw invalid(`${where}.tools`, 'must be a list');
      const namespace = tool.name;
      tool.tools.forEach((inner: unknown, j) => {
        const innerTool = (inner ?? {}) as Json;
        if (innerTool.type === 'function') out.push(functionTool(innerTool, `${where}.tools[${j}]`, names, namespace));
      });
    }
    // Other types (hosted tools, MCP, unknown ones) are left out: a chat upstream cannot run them.
  });
  return { tools: out.length > 0 ? out : undefined, names };
}

/**
 * The chat `tool_choice`: `auto`, `none`, `required` as they are; a named `function` (with its
 * `namespace`) or `custom` tool as that function. A choice of a tool that was left out, or
 * `required` with no tool left, falls back to `undefined` (the upstream's default, `auto`).
 */
export function chatToolChoice(choice: unknown, names: ToolNames, haveTools: boolean): unknown {
  if (choice === undefined || choice === null || !haveTools) return undefined;
  if (choice === 'auto' || choice === 'none' || choice === 'required') return choice;
  if (typeof choice === 'string') throw invalid('tool_choice', 'must be auto, none, required or a tool');
  if (typeof choice !== 'object' || Array.isArray(choice)) throw invalid('tool_choice', 'must be auto, none, required or a tool');
  const c = choice as Json;
  if ((c.type === 'function' || c.type === 'custom') && typeof c.name === 'string') {
    const namespace = typeof c.namespace === 'string' ? c.namespace : undefined;
    return { type: 'function', function: { name: names.chatName(c.type, c.name, namespace) } };
  }
  return undefined;
}
