/**
 * Turn marks of the native CLIs' sessions (activities/agent/native-marks.ts): what a completed turn
 * records from each CLI's stream (Claude Code's last main-chain assistant message uuid, Codex's
 * turn id), how marks accumulate, and how the fork helper cuts them at an anchor (the fork point
 * set, later marks dropped, a historical fork without a mark refused). Also Codex's first run of a
 * fork: `thread/fork` through the anchor's turn instead of `thread/resume`.
 */
import assert from 'node:assert/strict';
import { CodexAppServer } from '../../../activities/agent/codex-app-server';
import { claudeLine, newNativeRun } from '../../../activities/agent/native-lines';
import { MAX_MARKS, cutNativeMarks, parseNativeMarks, withTurnMark } from '../../../activities/agent/native-marks';

type Json = Record<string, unknown>;

const line = (obj: Json) => ({ line: JSON.stringify(obj) });

describe('native CLI turn marks', () => {
  it('takes Claude Code\'s last assistant message uuid of the main conversation, not a sub-agent\'s', () => {
    const run = newNativeRun();
    claudeLine(line({ type: 'assistant', uuid: 'a-1', session_id: 's-1', parent_tool_use_id: null, message: { content: [{ type: 'text', text: 'one' }] } }), run);
    claudeLine(line({ type: 'assistant', uuid: 'sub-1', session_id: 's-1', parent_tool_use_id: 'toolu_1', message: { content: [{ type: 'text', text: 'sub' }] } }), run);
    assert.equal(run.turnMark, 'a-1');
    claudeLine(line({ type: 'assistant', uuid: 'a-2', session_id: 's-1', parent_tool_use_id: null, message: { content: [{ type: 'text', text: 'two' }] } }), run);
    claudeLine(line({ type: 'result', subtype: 'success', result: 'two', session_id: 's-1' }), run);
    assert.equal(run.turnMark, 'a-2');
    assert.equal(run.sessionId, 's-1');
  });

  it('takes Codex\'s turn id from a completed turn only', () => {
    const run = newNativeRun();
    const server = new CodexAppServer(run, { model: 'm', prompt: 'p', signal: new AbortController().signal });
    server.open({ write: () => undefined, end: () => undefined });
    server.line(line({ method: 'turn/completed', params: { threadId: 't', turn: { id: 'turn-failed', status: 'failed', items: [] } } }));
    assert.equal(run.turnMark, undefined);
    const ok = newNativeRun();
    const again = new CodexAppServer(ok, { model: 'm', prompt: 'p', signal: new AbortController().signal });
    again.open({ write: () => undefined, end: () => undefined });
    again.line(line({ method: 'turn/completed', params: { threadId: 't', turn: { id: 'turn-2', status: 'completed', items: [] } } }));
    assert.equal(ok.turnMark, 'turn-2');
  });

  it('adds a mark per turn (replacing a retried turn\'s), clears the fork point, and keeps the latest MAX_MARKS', () => {
    let marks = withTurnMark({ version: 1, fork: { session: 's', at: 'x' }, turns: [] }, { job: 'j', seq: 1, session: 's', at: 'a' });
    assert.equal(marks.fork, undefined);
    marks = withTurnMark(marks, { job: 'j', seq: 2, session: 's', at: 'b' });
    marks = withTurnMark(marks, { job: 'j', seq: 2, session: 's', at: 'c' });
    assert.deepEqual(marks.turns.map((m) => [m.seq, m.at]), [[1, 'a'], [2, 'c']]);
    for (let seq = 3; seq <= MAX_MARKS + 5; seq++) marks = withTurnMark(marks, { job: 'j', seq, session: 's', at: `m${seq}` });
    assert.equal(marks.turns.length, MAX_MARKS);
    assert.equal(marks.turns.at(-1)!.seq, MAX_MARKS + 5);
    assert.deepEqual(parseNativeMarks(JSON.stringify(marks)), marks, 'round trip');
    assert.deepEqual(parseNativeMarks('not json'), { version: 1, turns: [] });
    assert.deepEqual(parseNativeMarks(JSON.stringify({ version: 1, turns: [{ job: 'j', seq: 1, session: 'bad id', at: 'a' }] })).turns, [], 'an id a CLI would not print is dropped');
  });

  it('cuts at the anchor: the fork point set, later marks dropped; without a mark a historical fork fails', () => {
    const text = JSON.stringify({ version: 1, turns: [{ job: 'j', seq: 1, session: 's1', at: 'a1' }, { job: 'j', seq: 2, session: 's1', at: 'a2' }] });
    const cut = JSON.parse(cutNativeMarks(text, { from_job_id: 'j', anchor_seq: 1, historical: true })!) as Json;
    assert.deepEqual(cut, { version: 1, fork: { session: 's1', at: 'a1' }, turns: [{ job: 'j', seq: 1, session: 's1', at: 'a1' }] });
    assert.throws(() => cutNativeMarks(text, { from_job_id: 'other', anchor_seq: 1, historical: true }), /no mark for turn 1 \(a turn run before turn marks, or too long ago\), so this fork cannot start after it/);
    assert.throws(() => cutNativeMarks(undefined, { from_job_id: 'j', anchor_seq: 1, historical: true }), /no mark for turn 1/);
    assert.equal(cutNativeMarks(undefined, { from_job_id: 'j', anchor_seq: 3, historical: false }), undefined, 'a fork at the latest turn without a mark resumes the copy whole');
  });

  it('Codex\'s fork run forks the thread through the anchor\'s turn instead of resuming', () => {
    const written: Json[] = [];
    const server = new CodexAppServer(newNativeRun(), { model: 'm', prompt: 'p', signal: new AbortController().signal, resumeId: 'stored', fork: { threadId: 'orig', lastTurnId: 'turn-1' } });
    server.open({ write: (t) => written.push(...t.split('\n').filter(Boolean).map((l) => JSON.parse(l) as Json)), end: () => undefined });
    server.line(line({ id: 1, result: {} }));
    assert.deepEqual(written[1], { id: 2, method: 'thread/fork', params: { threadId: 'orig', lastTurnId: 'turn-1', model: 'm', cwd: '/workspace', approvalPolicy: 'never', sandbox: 'danger-full-access', excludeTurns: true } });
    server.line(line({ id: 2, error: { message: 'no such turn' } }));
    assert.equal((server as unknown as { run: { failure?: string } }).run.failure, 'the app-server refused thread/fork: no such turn');
  });
});
