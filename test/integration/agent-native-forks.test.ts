/**
 * Forks of Codex and Claude Code chats at an earlier turn, end to end (PostgreSQL, Temporal,
 * Docker, gateway, a fake chat upstream on loopback; docs/sandboxes.md "Forks"): the real CLIs run
 * in the chat's container through the model relay. A chat is told one fact in turn 1 and another in
 * turn 2; each completed turn leaves a mark of where the CLI's session stands. A fork at turn 1
 * makes its own CLI session from the original's cut there: its first model request carries turn 1's
 * conversation and not turn 2's, and the original chat continues with both.
 */
import assert from 'node:assert/strict';
import { memberPaths } from '../../activities/docker/sandbox-container';
import { FIRST_MEMBER_UID } from '../../agent/jobs/turn-admission';
import { startAgentStack, ownerCall, AGENT_MODEL, type AgentStack } from '../support/agent-stack';
import { fileInChat } from '../support/docker';
import type { Behaviour, RecordedRequest } from '../support/fake-upstream';
import { waitFor } from '../support/wait';

type Json = Record<string, unknown>;

interface TurnView { seq: number; state: string; result: string | null; error?: string }

const FINAL = 'Noted.';

const finalText: Behaviour = {
  kind: 'dynamic',
  choose: (request) => ((request.body as Json | undefined)?.stream === true ? { kind: 'sse', pieces: [FINAL] } : { kind: 'json', content: FINAL }),
};

async function settled(stack: AgentStack, jobId: string, count: number): Promise<TurnView[]> {
  return waitFor(async () => {
    const res = await ownerCall(stack, 'GET', `/v1/agent/jobs/${jobId}`);
    const list = ((await res.json()) as { turns: TurnView[] }).turns;
    return list.length === count && list.every((t) => ['completed', 'failed', 'cancelled'].includes(t.state)) ? list : undefined;
  }, `${count} settled turns`, 150_000);
}

async function completedTurn(stack: AgentStack, jobId: string, seq: number): Promise<void> {
  const list = await settled(stack, jobId, seq);
  const turn = list.find((t) => t.seq === seq)!;
  assert.equal(turn.state, 'completed', `turn ${seq} of ${jobId}: ${turn.error ?? ''}`);
}

async function sendTurn(stack: AgentStack, jobId: string, prompt: string): Promise<void> {
  const res = await ownerCall(stack, 'POST', `/v1/agent/jobs/${jobId}/turns`, { prompt });
  assert.equal(res.status, 201, await res.clone().text());
}

/** The first model request whose body carries `marker` (the turn's own prompt). */
function requestWith(requests: RecordedRequest[], marker: string): RecordedRequest {
  const found = requests.find((r) => r.rawBody.includes(marker));
  assert.ok(found, `a model request carrying ${marker}`);
  return found;
}

function sessionFile(jobId: string, uid: number, file: string): Promise<string> {
  return fileInChat(jobId, `${memberPaths(uid).sessionDir}/${file}`);
}

describe('forks of native CLI chats at an earlier turn (Codex CLI, Claude Code)', function () {
  this.timeout(600_000);
  let stack: AgentStack;

  before(async () => {
    stack = await startAgentStack({ modelFields: 'supports_tools: true, supported_params: [temperature, max_tokens, parallel_tool_calls]' });
  });
  after(async () => {
    await stack?.close();
  });

  for (const driver of ['claude-code', 'codex'] as const) {
    const dir = driver === 'codex' ? 'codex' : 'claude';
    it(`${driver}: a fork at turn 1 continues from turn 1's conversation without turn 2's; the original keeps both`, async () => {
      const first = `Remember the code word ALPHA-${driver}.`;
      const second = `Remember the colour BRAVO-${driver}.`;
      stack.upstream.enqueue(finalText, finalText, finalText, finalText);
      const created = await ownerCall(stack, 'POST', '/v1/agent/jobs', { prompt: first, model: AGENT_MODEL, repo: null, driver });
      assert.equal(created.status, 201, await created.clone().text());
      const jobId = ((await created.json()) as { job_id: string }).job_id;
      await completedTurn(stack, jobId, 1);
      await sendTurn(stack, jobId, second);
      await completedTurn(stack, jobId, 2);

      const marks = JSON.parse(await sessionFile(jobId, FIRST_MEMBER_UID, `${dir}.turns.json`)) as { turns: Array<{ job: string; seq: number; session: string; at: string }> };
      assert.deepEqual(marks.turns.map((m) => [m.job, m.seq]), [[jobId, 1], [jobId, 2]], 'each completed turn is marked');
      assert.notEqual(marks.turns[0]!.at, marks.turns[1]!.at);

      const before = stack.upstream.chatRequests().length;
      const forkPrompt = `FORK-${driver}: which words do you remember?`;
      const forked = await ownerCall(stack, 'POST', `/v1/agent/jobs/${jobId}/fork`, { anchor_seq: 1, prompt: forkPrompt });
      assert.equal(forked.status, 201, await forked.clone().text());
      const fork = (await forked.json()) as { job_id: string; historical: boolean };
      assert.equal(fork.historical, true);
      await completedTurn(stack, fork.job_id, 1);
      const forkRequest = requestWith(stack.upstream.chatRequests().slice(before), forkPrompt);
      assert.ok(forkRequest.rawBody.includes(`ALPHA-${driver}`), 'the fork continues turn 1\'s conversation');
      assert.ok(!forkRequest.rawBody.includes(`BRAVO-${driver}`), 'turn 2 is not in the fork\'s conversation');

      // The fork's own session: a new CLI session, marked at its first turn; a second turn resumes it.
      const forkSession = (await sessionFile(jobId, FIRST_MEMBER_UID + 1, `${dir}.session`)).trim();
      assert.notEqual(forkSession, marks.turns[0]!.session, 'the fork has a session of its own');
      await sendTurn(stack, fork.job_id, `FORK-AGAIN-${driver}`);
      await completedTurn(stack, fork.job_id, 2);
      const again = requestWith(stack.upstream.chatRequests().slice(before), `FORK-AGAIN-${driver}`);
      assert.ok(again.rawBody.includes(forkPrompt) && again.rawBody.includes(`ALPHA-${driver}`) && !again.rawBody.includes(`BRAVO-${driver}`));

      stack.upstream.enqueue(finalText);
      await sendTurn(stack, jobId, `ORIGINAL-3-${driver}`);
      await completedTurn(stack, jobId, 3);
      const original = requestWith(stack.upstream.chatRequests().slice(before), `ORIGINAL-3-${driver}`);
      assert.ok(original.rawBody.includes(`ALPHA-${driver}`) && original.rawBody.includes(`BRAVO-${driver}`), 'the original keeps both turns');
      assert.ok(!original.rawBody.includes(forkPrompt), 'the fork\'s turns are not the original\'s');
    });
  }
});
