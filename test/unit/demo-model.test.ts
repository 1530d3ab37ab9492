/**
 * The demo model's rules as pure functions (docs/demo-model.md): when `npm start` serves it (never
 * with a models file, an active manifest naming one, or a bundled-registry credential), and what
 * the script answers: a file task with each driver's tools, the native question with each CLI's
 * question tool, the final answer once tool results came back, and plain text otherwise.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { BUNDLED_MODELS_FILE, demoModelDecision, registryVariables, startDecision } from '../../ops/dev/demo-model';
import { DEMO_LABEL, demoReply, fileTaskOf, type DemoReply } from '../../ops/dev/demo-script';
import { loadSettings } from '../../lib/settings';
import { titleChatBody } from '../../agent/jobs/generated-titles';
import { rewriteChatBody } from '../../agent/prompts/rewrite-model';

type Json = Record<string, unknown>;

const tool = (name: string) => ({ type: 'function', function: { name, parameters: { type: 'object' } } });
const BUILTIN = ['bash', 'read_file', 'write_file'].map(tool);
const CLAUDE = ['Bash', 'Read', 'Write', 'AskUserQuestion'].map(tool);
const CODEX = ['exec_command', 'write_stdin', 'request_user_input'].map(tool);

function call(reply: DemoReply): { name: string; args: Json; id: string } {
  assert.equal(reply.kind, 'tool_calls', JSON.stringify(reply));
  const [first] = (reply).calls;
  return { name: first!.name, args: JSON.parse(first!.arguments) as Json, id: first!.id };
}

function text(reply: DemoReply): string {
  assert.equal(reply.kind, 'text', JSON.stringify(reply));
  return (reply).text;
}

/** Runs the script like a client would: each tool call answered by `results(name)`, until text. */
function converse(prompt: string, tools: unknown[], system = 'You are an agent.', result = (name: string) => `ran ${name}`): { calls: Array<{ name: string; args: Json }>; answer: string } {
  const messages: Json[] = [{ role: 'system', content: system }, { role: 'user', content: prompt }];
  const calls: Array<{ name: string; args: Json }> = [];
  for (let i = 0; i < 10; i += 1) {
    const reply = demoReply({ model: 'demo', messages, tools });
    if (reply.kind === 'text') return { calls, answer: reply.text };
    const c = call(reply);
    calls.push({ name: c.name, args: c.args });
    messages.push({ role: 'assistant', content: null, tool_calls: [{ id: c.id, type: 'function', function: { name: c.name, arguments: JSON.stringify(c.args) } }] });
    messages.push({ role: 'tool', tool_call_id: c.id, content: result(c.name) });
  }
  throw new Error('the demo kept calling tools');
}

describe('demo model: when npm start serves it', () => {
  const base = { env: {}, bundledVariables: ['AGGREGATOR_API_KEY'], manifestModels: 'none' as const };

  it('starts only with no models file, no manifest models path and no bundled credential', () => {
    assert.deepEqual(demoModelDecision(base), { start: true });
    assert.deepEqual(demoModelDecision({ ...base, env: { MODELS_CONFIG_PATH: '  ', AGGREGATOR_API_KEY: '' } }), { start: true }, 'blank counts as unset');
    const refused: Array<[Parameters<typeof demoModelDecision>[0], RegExp]> = [
      [{ ...base, env: { MODELS_CONFIG_PATH: '/etc/models.yaml' } }, /MODELS_CONFIG_PATH/],
      [{ ...base, env: { MODELS_CONFIG: 'models.yaml' } }, /MODELS_CONFIG /],
      [{ ...base, env: { AGGREGATOR_API_KEY: 'sk-real' } }, /AGGREGATOR_API_KEY is set/],
      [{ ...base, manifestModels: 'configured' }, /paths\.models/],
      [{ ...base, manifestModels: 'unreadable' }, /manifest/],
    ];
    for (const [input, reason] of refused) {
      const decision = demoModelDecision(input);
      assert.equal(decision.start, false, JSON.stringify(input));
      assert.match((decision as { reason: string }).reason, reason);
    }
  });

  it("reads the bundled registry's variables, so a credential added there also keeps the demo off", () => {
    assert.deepEqual(registryVariables(readFileSync(BUNDLED_MODELS_FILE, 'utf8')), ['AGGREGATOR_API_KEY']);
    assert.deepEqual(registryVariables('a: ${ONE}\nb: ${TWO}\nc: ${ONE}\nd: $NOT'), ['ONE', 'TWO']);
  });

  it("start's decision: from the process environment and settings", () => {
    const decide = (env: Record<string, string>) => startDecision(env, loadSettings(env)).start;
    assert.equal(decide({}), true);
    assert.equal(decide({ AGGREGATOR_API_KEY: 'sk-x' }), false);
    assert.equal(decide({ MODELS_CONFIG_PATH: 'mine.yaml' }), false);
    assert.equal(decide({ DISTRIBUTION_CONFIG_MODE: 'active', DISTRIBUTION_CONFIG_PATH: '/nonexistent/manifest.yaml' }), false);
    assert.equal(decide({ DISTRIBUTION_CONFIG_MODE: 'dark', DISTRIBUTION_CONFIG_PATH: '/nonexistent/manifest.yaml' }), true, 'a dark manifest is not applied');
  });
});

describe('demo model: the script', () => {
  it('built-in driver: write_file, then bash showing the file, then a labelled answer quoting the result', () => {
    const { calls, answer } = converse('Create hello.txt saying hi', BUILTIN, 'x', (name) => (name === 'bash' ? '-rw-r--r-- 1 agent agent 3 hello.txt\nhi' : 'ok'));
    assert.deepEqual(calls, [
      { name: 'write_file', args: { path: 'hello.txt', content: 'hi\n' } },
      { name: 'bash', args: { command: "ls -l 'hello.txt' && cat 'hello.txt'" } },
    ]);
    assert.ok(answer.startsWith(DEMO_LABEL));
    assert.match(answer, /hello\.txt hi/);
  });

  it('Claude Code: Write at the working directory its system prompt names, then Bash; without one, Bash writes', () => {
    const withCwd = converse('Write notes/a.md containing "two words"', CLAUDE, '<env>\nPrimary working directory: /workspace\nIs a git repository: false');
    assert.deepEqual(withCwd.calls.map((c) => c.name), ['Write', 'Bash']);
    assert.deepEqual(withCwd.calls[0]!.args, { file_path: '/workspace/notes/a.md', content: 'two words\n' });
    const noCwd = converse('Create x.txt saying it\'s here', CLAUDE);
    assert.equal(noCwd.calls[0]!.name, 'Bash');
    assert.equal(noCwd.calls[0]!.args.command, `printf '%s' 'it'\\''s here\n' > 'x.txt'`);
  });

  it("Codex: its shell tool writes and shows the file (exec_command's cmd, shell's argv)", () => {
    assert.deepEqual(converse('Create hello.txt saying hi', CODEX).calls.map((c) => c.args), [
      { cmd: "printf '%s' 'hi\n' > 'hello.txt'" }, { cmd: "ls -l 'hello.txt' && cat 'hello.txt'" },
    ]);
    assert.deepEqual(converse('Create hello.txt saying hi', [tool('shell')]).calls[0]!.args, { command: ['bash', '-lc', "printf '%s' 'hi\n' > 'hello.txt'"] });
  });

  it('"ask me": the CLI\'s question tool in its own shape, then the answer quoted', () => {
    const codex = converse('Please ask me a question', CODEX, 'x', () => '{"answers":{"colour":{"answers":["Green"]}}}');
    assert.deepEqual(codex.calls.map((c) => c.name), ['request_user_input']);
    assert.deepEqual((codex.calls[0]!.args.questions as Json[])[0]!.id, 'colour');
    assert.match(codex.answer, /your answer was: .*Green/);
    const claude = converse('ask me something', CLAUDE, 'x', () => 'User has answered: Blue');
    assert.deepEqual(claude.calls.map((c) => c.name), ['AskUserQuestion']);
    assert.equal((claude.calls[0]!.args.questions as Json[])[0]!.multiSelect, false);
    assert.match(claude.answer, /Blue/);
  });

  it('a CLI\'s follow-up user message beside tool results is not a new prompt; a later turn starts again', () => {
    const messages: Json[] = [
      { role: 'user', content: [{ type: 'text', text: '<system-reminder>ctx</system-reminder>' }, { type: 'text', text: 'Create a.txt saying hi' }] },
      { role: 'assistant', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'Bash', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'c1', content: 'ok' },
      { role: 'user', content: '<system-reminder>todo list is empty</system-reminder>' },
    ];
    assert.equal(call(demoReply({ messages, tools: CLAUDE })).name, 'Bash', 'step 2 of the same prompt');
    const done = [...messages, { role: 'assistant', tool_calls: [{ id: 'c2', type: 'function', function: { name: 'Bash', arguments: '{}' } }] }, { role: 'tool', tool_call_id: 'c2', content: 'hi' }];
    assert.match(text(demoReply({ messages: done, tools: CLAUDE })), /done/);
    const next = [...done, { role: 'assistant', content: 'done' }, { role: 'user', content: 'Create b.txt saying yo' }];
    const again = call(demoReply({ messages: next, tools: CLAUDE }));
    assert.equal(again.name, 'Bash');
    assert.notEqual(again.id, 'call_demo_2', 'ids are unique within the conversation');
  });

  it('anything else: one deterministic labelled text naming the docs; tool_choice none gets text', () => {
    const a = text(demoReply({ messages: [{ role: 'user', content: 'Say hi' }] }));
    assert.equal(a, text(demoReply({ messages: [{ role: 'user', content: 'Say hi' }] })));
    assert.ok(a.startsWith(DEMO_LABEL));
    assert.match(a, /You said: "Say hi"/);
    assert.match(a, /docs\/demo-model\.md/);
    assert.match(text(demoReply({ messages: [{ role: 'user', content: 'Create a.txt' }], tools: BUILTIN, tool_choice: 'none' })), /scripted/);
    assert.match(text(demoReply({ messages: [{ role: 'user', content: 'ask me' }], tools: BUILTIN })), /Try "Create hello\.txt/);
    assert.match(text(demoReply({ messages: [null, 3, { role: 'user', content: 7 }] })), /scripted/);
  });

  it('file tasks: a file name with a dot, never a parent path', () => {
    assert.deepEqual(fileTaskOf('Create hello.txt saying hi.'), { path: 'hello.txt', content: 'hi\n' });
    assert.deepEqual(fileTaskOf('please write a file called "src/x.py"'), { path: 'src/x.py', content: 'hi\n' });
    assert.equal(fileTaskOf('Create ../etc.txt saying x'), undefined);
    assert.equal(fileTaskOf('Create a plan'), undefined);
  });
});

describe("demo model: the control plane's own calls", () => {
  it('a chat title: "Demo: " and the first words of the prompt, short enough for a title', () => {
    const title = text(demoReply(titleChatBody('demo', 'Create hello.txt saying hi and then more words here')));
    assert.equal(title, 'Demo: Create hello.txt saying hi and then');
  });

  it('the prompt rewrite: two clarification questions, then the draft with the answers, as the strict JSON it parses', () => {
    const asked = JSON.parse(text(demoReply(rewriteChatBody({ prompt: 'Make a file', model: 'demo', clarify: true })))) as { questions: string[] };
    assert.equal(asked.questions.length, 2);
    const rewritten = JSON.parse(text(demoReply(rewriteChatBody({ prompt: 'Make a file', model: 'demo', answers: [{ question: 'Which file?', answer: 'hello.txt' }] })))) as { prompt: string };
    assert.equal(rewritten.prompt, 'Make a file\n\nClarifications: Which file? hello.txt');
  });
});
