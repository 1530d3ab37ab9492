/**
 * The demo model's script (docs/demo-model.md): a pure function from a chat-completions request
 * to the one reply the scripted demo gives, with no randomness, so the same conversation always
 * gets the same answer. It reads only the offered tools and the conversation since the prompt:
 * - a file task ("Create hello.txt saying hi") with a write tool offered: write the file, then show
 *   it with a shell command, then a short text answer quoting the last tool result;
 * - a prompt containing "ask me" with a native question tool offered (Codex `request_user_input`,
 *   Claude Code `AskUserQuestion`): ask one question, then answer quoting the owner's answer;
 * - the control plane's own calls, told by their system prompt: a chat title ("Demo: " and the
 *   prompt's first words), and the prompt rewrite's strict JSON (two clarification questions, or
 *   the draft with the answers appended), so those features work against the demo too;
 * - anything else: a short text saying it is the scripted demo and how to configure a real model.
 * Tool sets recognised: the built-in driver (`write_file`, `bash`), Claude Code (`Write`, `Bash`)
 * and Codex's shell tools (`exec_command`, `shell_command`, `shell`).
 */

/** The display name of the demo chat model; every text answer starts with it. */
export const DEMO_LABEL = 'Demo model (scripted, not an LLM)';

/** Where a newcomer learns to replace the demo (repository-relative). */
export const DEMO_DOCS = 'docs/demo-model.md';

/** One scripted tool call; `arguments` is the JSON text the client receives. */
export interface DemoToolCall {
  id: string;
  name: string;
  arguments: string;
}

/** The demo's reply: a text answer, or tool calls for the client to run. */
export type DemoReply = { kind: 'text'; text: string } | { kind: 'tool_calls'; calls: DemoToolCall[] };

type Json = Record<string, unknown>;

/** Most tool calls the demo makes after one prompt: a conversation never loops. */
const MAX_STEPS = 4;
const CODEX_SHELLS = ['exec_command', 'shell_command', 'shell'] as const;
const FILE_TASK = /\b(?:create|write|make)\s+(?:a\s+file\s+(?:named\s+|called\s+)?)?["'`]?([A-Za-z0-9_][A-Za-z0-9._/-]{0,99})["'`]?(?:\s+(?:saying|containing|that says|with(?:\s+the\s+text)?)\s+(.+))?/i;
const ASK_ME = /\bask\s+me\b/i;
const REMINDER = /<system-reminder>[\s\S]*?<\/system-reminder>/g;

/** The raw text of a message's content (a string, or text parts). */
function rawTextOf(content: unknown): string {
  return typeof content === 'string'
    ? content
    : Array.isArray(content) ? content.map((p) => (typeof (p as Json)?.text === 'string' ? (p as Json).text as string : '')).join('\n') : '';
}

/** The text of a message's content, reminders that CLIs add removed. */
function textOf(content: unknown): string {
  return rawTextOf(content).replace(REMINDER, '').trim();
}

/** Names of the function tools a request offered (chat `tools[].function.name`, or `tools[].name`). */
export function offeredTools(body: Json): string[] {
  const tools = Array.isArray(body.tools) ? body.tools : [];
  return tools.map((t) => {
    const tool = (t ?? {}) as Json;
    const fn = (tool.function ?? {}) as Json;
    return typeof fn.name === 'string' ? fn.name : typeof tool.name === 'string' ? tool.name : '';
  }).filter(Boolean);
}

interface Conversation {
  prompt: string;
  /** Assistant tool-call messages since the prompt. */
  steps: number;
  /** The last tool result since the prompt (text). */
  lastResult: string | undefined;
  /** The system and user messages' whole text, reminders included (Claude Code names its working directory there). */
  context: string;
}

/**
 * The prompt is the last user message that is not the continuation of tool results (a user
 * message right after `tool` messages carries what a CLI adds beside its tool results).
 */
function readConversation(messages: readonly Json[]): Conversation {
  let promptAt = -1;
  for (let i = messages.length - 1; i >= 0; i -= 1) {
    const m = messages[i]!;
    if (m.role === 'user' && messages[i - 1]?.role !== 'tool' && textOf(m.content) !== '') {
      promptAt = i;
      break;
    }
  }
  const after = messages.slice(promptAt + 1);
  const results = after.filter((m) => m.role === 'tool');
  return {
    prompt: promptAt >= 0 ? textOf(messages[promptAt]!.content) : '',
    steps: after.filter((m) => m.role === 'assistant' && Array.isArray(m.tool_calls) && m.tool_calls.length > 0).length,
    lastResult: results.length ? textOf(results[results.length - 1]!.content) : undefined,
    context: messages.filter((m) => m.role !== 'assistant' && m.role !== 'tool').map((m) => rawTextOf(m.content)).join('\n'),
  };
}

/** A single-quoted shell word. */
function shellQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

interface FileTask {
  path: string;
  content: string;
}

/** "Create hello.txt saying hi" → `{path: 'hello.txt', content: 'hi\n'}`; no `..`, no absolute path. */
export function fileTaskOf(prompt: string): FileTask | undefined {
  const match = FILE_TASK.exec(prompt);
  if (!match || !match[1]!.includes('.') || match[1]!.split('/').includes('..')) return undefined;
  const said = (match[2] ?? 'hi').trim().replace(/^["'`](.*)["'`][.!]?$/, '$1').replace(/[.!]$/, '').slice(0, 200);
  return { path: match[1]!, content: `${said || 'hi'}\n` };
}

/** The calls (name and arguments) that carry out the task with the offered tools, in order. */
function plan(tools: readonly string[], conversation: Conversation): Array<{ name: string; args: Json }> {
  const questionTool = ['request_user_input', 'AskUserQuestion'].find((n) => tools.includes(n));
  if (questionTool && ASK_ME.test(conversation.prompt)) {
    const options = [{ label: 'Blue', description: 'The colour of the sky' }, { label: 'Green', description: 'The colour of grass' }];
    const question = 'Which colour do you like best?';
    return [{
      name: questionTool,
      args: questionTool === 'request_user_input'
        ? { questions: [{ id: 'colour', header: 'Colour', question, options }] }
        : { questions: [{ question, header: 'Colour', options, multiSelect: false }] },
    }];
  }
  const task = fileTaskOf(conversation.prompt);
  if (!task) return [];
  const show = `ls -l ${shellQuote(task.path)} && cat ${shellQuote(task.path)}`;
  const writeByShell = `printf '%s' ${shellQuote(task.content)} > ${shellQuote(task.path)}`;
  if (tools.includes('write_file') && tools.includes('bash')) {
    return [{ name: 'write_file', args: { path: task.path, content: task.content } }, { name: 'bash', args: { command: show } }];
  }
  if (tools.includes('Bash')) {
    // "Primary working directory: /workspace" in Claude Code's environment section.
    const cwd = /[Ww]orking directory: (\/[^\s`'"]+)/.exec(conversation.context)?.[1];
    const write = tools.includes('Write') && cwd
      ? { name: 'Write', args: { file_path: `${cwd.replace(/\/$/, '')}/${task.path}`, content: task.content } }
      : { name: 'Bash', args: { command: writeByShell, description: `Write ${task.path}` } };
    return [write, { name: 'Bash', args: { command: show, description: `Show ${task.path}` } }];
  }
  const shell = CODEX_SHELLS.find((n) => tools.includes(n));
  if (!shell) return [];
  const codexArgs = (command: string): Json => (shell === 'exec_command' ? { cmd: command } : shell === 'shell_command' ? { command } : { command: ['bash', '-lc', command] });
  return [{ name: shell, args: codexArgs(writeByShell) }, { name: shell, args: codexArgs(show) }];
}

function clip(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
}

/** The demo's text when there is nothing (more) to do. */
function finalText(conversation: Conversation, tools: readonly string[], planned: number): string {
  if (planned > 0 && conversation.lastResult !== undefined) {
    return ASK_ME.test(conversation.prompt) && !fileTaskOf(conversation.prompt)
      ? `${DEMO_LABEL}: thanks, your answer was: ${clip(conversation.lastResult, 300)}`
      : `${DEMO_LABEL}: done. The last tool result was: ${clip(conversation.lastResult, 300)}`;
  }
  const hint = tools.length
    ? ' Try "Create hello.txt saying hi" (writes a file with your tools), or a prompt containing "ask me" (a native CLI asks you a question).'
    : '';
  const said = conversation.prompt ? ` You said: "${clip(conversation.prompt, 120)}".` : '';
  return `${DEMO_LABEL}: I give scripted answers only.${said}${hint} To talk to a real model, configure one: see ${DEMO_DOCS}.`;
}

/**
 * The control plane's own model calls (agent/jobs/generated-titles.ts, agent/prompts/rewrite-model.ts),
 * told by their system prompt: a title, clarification questions, or the rewritten prompt.
 */
function controlPlaneReply(messages: readonly Json[], tools: readonly string[]): string | undefined {
  if (tools.length > 0 || messages[0]?.role !== 'system') return undefined;
  const system = textOf(messages[0].content);
  const user = textOf(messages.find((m) => m.role === 'user')?.content);
  if (/reply with the title only/i.test(system)) return `Demo: ${clip(user.split(/\s+/).slice(0, 6).join(' '), 50)}`;
  if (!/\{"(questions|prompt)": \[?"\.\.\."/.test(system)) return undefined;
  let draft: { draft_prompt?: unknown; answers?: unknown } = {};
  try {
    draft = JSON.parse(user) as typeof draft;
  } catch {
    // Not the rewrite's JSON: the draft is the text itself.
    draft = { draft_prompt: user };
  }
  if (system.includes('{"questions"')) return JSON.stringify({ questions: ['Which file should the agent create?', 'What should the file say?'] });
  const answerText = (a: unknown) => {
    const { question, answer } = (a ?? {}) as Json;
    return typeof question === 'string' && typeof answer === 'string' ? `${question} ${answer}` : JSON.stringify(a);
  };
  const answers = Array.isArray(draft.answers) ? draft.answers.map((a) => clip(answerText(a), 500)) : [];
  const prompt = `${clip(typeof draft.draft_prompt === 'string' ? draft.draft_prompt : '', 8000)}${answers.length ? `\n\nClarifications: ${answers.join('; ')}` : ''}`;
  return JSON.stringify({ prompt: prompt.trim() || 'Create hello.txt saying hi' });
}

/** The demo's reply to a chat-completions request body (already checked to have a `messages` array). */
export function demoReply(body: Json): DemoReply {
  const messages = (body.messages as unknown[]).filter((m): m is Json => typeof m === 'object' && m !== null && !Array.isArray(m));
  const tools = offeredTools(body);
  const internal = controlPlaneReply(messages, tools);
  if (internal !== undefined) return { kind: 'text', text: internal };
  const conversation = readConversation(messages);
  const steps = plan(tools, conversation);
  if (conversation.steps < steps.length && conversation.steps < MAX_STEPS && body.tool_choice !== 'none') {
    const step = steps[conversation.steps]!;
    // Unique within the conversation (it only grows), so a later turn's calls never reuse an id.
    return { kind: 'tool_calls', calls: [{ id: `call_demo_${messages.length}`, name: step.name, arguments: JSON.stringify(step.args) }] };
  }
  return { kind: 'text', text: finalText(conversation, tools, steps.length) };
}
