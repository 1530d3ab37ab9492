/**
 * The CLI driver's input format: stdout split into lines across chunks (bounded), each line
 * normalized into a driver event or a run outcome; malformed and huge lines become notices.
 * Also the splitting of `AGENT_CLI_COMMAND` into argv.
 */
import assert from 'node:assert/strict';
import { LineSplitter, normalizeCliLine, MAX_EVENT_TEXT_CHARS, type CliLine, type SplitLine } from '../../activities/agent/cli-lines';
import { driverFor, splitCommandLine } from '../../activities/agent/drivers';
import { builtinDriver } from '../../activities/agent/builtin-driver';

function splitAll(chunks: string[], max?: number): SplitLine[] {
  const splitter = new LineSplitter(max);
  return [...chunks.flatMap((c) => splitter.push(c)), ...splitter.end()];
}

function normalize(line: string, names = new Map<string, string>()): CliLine {
  return normalizeCliLine({ line }, names);
}

describe('CLI driver line format', () => {
  it('splits lines across chunk boundaries, at every byte of a two-line stream', () => {
    const stream = '{"type":"assistant","text":"héllo"}\r\n{"type":"result","text":"done"}';
    for (let cut = 0; cut <= stream.length; cut += 1) {
      const lines = splitAll([stream.slice(0, cut), stream.slice(cut)]);
      assert.deepEqual(lines, [{ line: '{"type":"assistant","text":"héllo"}' }, { line: '{"type":"result","text":"done"}' }], `cut at ${cut}`);
    }
  });

  it('splits many lines in one chunk and keeps empty lines as empty', () => {
    assert.deepEqual(splitAll(['a\n\nb\n']), [{ line: 'a' }, { line: '' }, { line: 'b' }]);
    assert.deepEqual(splitAll([]), []);
  });

  it('reports an over-long line by its length and keeps the lines after it', () => {
    const lines = splitAll(['x'.repeat(30), 'y'.repeat(30), '\n{"type":"result","text":"ok"}\n'], 50);
    assert.deepEqual(lines, [{ oversized: 60, head: 'x'.repeat(30) + 'y'.repeat(30) }, { line: '{"type":"result","text":"ok"}' }]);
    // The head says what the line was: its first 256 characters, however long the line.
    const long = splitAll(['{"method":"turn/completed"', 'z'.repeat(2000), 'z'.repeat(2000), '\n'], 1000);
    assert.deepEqual(long, [{ oversized: 4026, head: `{"method":"turn/completed"${'z'.repeat(230)}` }]);
    assert.deepEqual(normalizeCliLine({ oversized: 60, head: '' }, new Map()), { kind: 'event', type: 'notice', payload: { kind: 'oversized_line', length: 60 } });
  });

  it('normalizes assistant text, tool use and tool result (carrying the tool name by id)', () => {
    const names = new Map<string, string>();
    assert.deepEqual(normalize('{"type":"assistant","text":"Looking."}', names), { kind: 'event', type: 'message', payload: { role: 'assistant', text: 'Looking.' } });
    assert.deepEqual(normalize('{"type":"tool_use","id":"t1","name":"shell","input":{"cmd":"ls"}}', names),
      { kind: 'event', type: 'tool_use', payload: { tool_use_id: 't1', tool_name: 'shell', input: { cmd: 'ls' } } });
    assert.deepEqual(normalize('{"type":"tool_result","tool_use_id":"t1","output":"a.txt","is_error":true}', names),
      { kind: 'event', type: 'tool_result', isError: true, payload: { tool_use_id: 't1', tool_name: 'shell', output: 'a.txt', is_error: true, truncated: false } });
    const unknown = normalize('{"type":"tool_result","tool_use_id":"zz","output":{"n":1}}', names);
    assert.equal(unknown.kind === 'event' && unknown.payload.tool_name, 'unknown');
    assert.equal(unknown.kind === 'event' && unknown.payload.output, '{"n":1}');
  });

  it('bounds huge tool output in the event', () => {
    const big = 'z'.repeat(MAX_EVENT_TEXT_CHARS + 10);
    const line = normalize(JSON.stringify({ type: 'tool_result', tool_use_id: 't', output: big }));
    assert.ok(line.kind === 'event');
    assert.ok(String(line.payload.output).length < MAX_EVENT_TEXT_CHARS + 100);
    assert.match(String(line.payload.output), /truncated 10 chars/);
    assert.equal(line.payload.truncated, true);
  });

  it('bounds a huge tool_use input to an excerpt of its JSON', () => {
    const line = normalize(JSON.stringify({ type: 'tool_use', id: 'w', name: 'write', input: { content: 'c'.repeat(MAX_EVENT_TEXT_CHARS) } }));
    assert.ok(line.kind === 'event');
    const input = line.payload.input as { truncated: boolean; excerpt: string };
    assert.equal(input.truncated, true);
    assert.ok(input.excerpt.startsWith('{"content":"ccc'));
    assert.ok(input.excerpt.length < MAX_EVENT_TEXT_CHARS + 100);
  });

  it('normalizes results and errors (rate_limited is retryable unless it says not; error only when it says so)', () => {
    assert.deepEqual(normalize('{"type":"result","text":"All done"}'), { kind: 'result', text: 'All done' });
    assert.deepEqual(normalize('{"type":"rate_limited","retry_after":3,"message":"slow down"}'), { kind: 'error', retryable: true, retryAfter: 3, message: 'slow down' });
    assert.deepEqual(normalize('{"type":"error","message":"bad key"}'), { kind: 'error', retryable: false, message: 'bad key' });
    assert.deepEqual(normalize('{"type":"error","retryable":true,"retry_after":1.5,"message":"overloaded"}'), { kind: 'error', retryable: true, message: 'overloaded' });
  });

  it('turns malformed lines into bounded notices, never throwing', () => {
    for (const bad of ['not json', '[1,2]', '{"text":"no type"}', '{"type":"assistant"}', '{"type":"tool_use","name":"x"}', `{"broken":"${'q'.repeat(5000)}`]) {
      const line = normalize(bad);
      assert.ok(line.kind === 'event' && line.type === 'notice', bad.slice(0, 40));
      assert.equal(line.payload.kind, 'malformed_line');
      assert.ok(String(line.payload.excerpt).length <= 512);
    }
    assert.deepEqual(normalize('   '), { kind: 'skip' });
    const other = normalize('{"type":"thinking","text":"hmm"}');
    assert.ok(other.kind === 'event' && other.type === 'notice' && other.payload.kind === 'unknown_line' && other.payload.line_type === 'thinking');
  });
});

describe('AGENT_CLI_COMMAND splitting', () => {
  it('splits on blanks and honours quotes and escapes without a shell', () => {
    assert.deepEqual(splitCommandLine('agent-cli --json'), ['agent-cli', '--json']);
    assert.deepEqual(splitCommandLine(`  python3 /opt/a\\ b.py  'x y' "say \\"hi\\" \\$HOME" ''  `), ['python3', '/opt/a b.py', 'x y', 'say "hi" $HOME', '']);
    assert.deepEqual(splitCommandLine('run a;b && $X'), ['run', 'a;b', '&&', '$X']);
    assert.deepEqual(splitCommandLine(`'it'"'"'s'`), [`it's`]);
  });

  it('driverFor picks the built-in loop or a CLI driver, refusing a broken command line', () => {
    assert.equal(driverFor('builtin', { AGENT_CLI_COMMAND: `'broken` }), builtinDriver);
    assert.equal(typeof driverFor('cli', { AGENT_CLI_COMMAND: 'agent-cli --json' }), 'function');
    assert.throws(() => driverFor('cli', { AGENT_CLI_COMMAND: `agent-cli 'broken` }), /AGENT_CLI_COMMAND has an unterminated/);
  });

  it('refuses unterminated quotes, a trailing backslash and an empty line', () => {
    assert.throws(() => splitCommandLine(`cli 'open`), /unterminated ' quote/);
    assert.throws(() => splitCommandLine('cli "open'), /unterminated " quote/);
    assert.throws(() => splitCommandLine('cli \\'), /lone backslash/);
    assert.throws(() => splitCommandLine('   '), /empty/);
  });
});
