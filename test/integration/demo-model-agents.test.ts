/**
 * The demo model drives real agent turns (docs/demo-model.md): the demo upstream (a real HTTP
 * server on loopback) behind the gateway as the chat's model, with PostgreSQL, Temporal, Docker
 * sandboxes and each driver. "Create hello.txt saying hi" makes the built-in driver, Claude Code
 * (through the messages surface) and Codex (through the responses surface) write the file with
 * their own tools, show it with a shell tool (a tool_result with the text), and finish with the
 * demo's labelled answer; "ask me" makes each native CLI ask its question, which the owner answers
 * through the API, and the demo's answer quotes it.
 */
import assert from 'node:assert/strict';
import { DEMO_LABEL } from '../../ops/dev/demo-script';
import { startDemoUpstream, type DemoUpstream } from '../../ops/dev/demo-upstream';
import { startAgentStack, ownerCall, docker, AGENT_MODEL, type AgentStack } from '../support/agent-stack';
import { execIn } from '../support/docker';
import { waitFor } from '../support/wait';

type Json = Record<string, unknown>;

interface TurnView { seq: number; state: string; result: string | null; error?: string }

async function settled(stack: AgentStack, jobId: string): Promise<TurnView> {
  return waitFor(async () => {
    const res = await ownerCall(stack, 'GET', `/v1/agent/jobs/${jobId}`);
    const [turn] = ((await res.json()) as { turns: TurnView[] }).turns;
    return turn && ['completed', 'failed', 'cancelled'].includes(turn.state) ? turn : undefined;
  }, 'the turn settled', 180_000);
}

async function startJob(stack: AgentStack, prompt: string, driver: string): Promise<string> {
  const created = await ownerCall(stack, 'POST', '/v1/agent/jobs', { prompt, model: AGENT_MODEL, repo: null, driver });
  assert.equal(created.status, 201, await created.clone().text());
  return ((await created.json()) as { job_id: string }).job_id;
}

async function workspaceFile(jobId: string, path: string): Promise<string> {
  const [container] = await docker().listContainers({ filters: { label: [`agent.chat=${jobId}`] } });
  assert.ok(container, 'the chat has a running container');
  const read = await execIn(docker().getContainer(container.Id), ['cat', path]);
  assert.equal(read.exitCode, 0, `cat ${path}: ${read.output}`);
  return read.output;
}

describe('demo model: real agent turns with each driver', function () {
  this.timeout(600_000);
  let demo: DemoUpstream;
  let stack: AgentStack;

  before(async () => {
    demo = await startDemoUpstream(0);
    stack = await startAgentStack({
      upstreamUrl: demo.url,
      modelFields: 'supports_tools: true, context_length: 200000, max_output_length: 32000, supported_params: [temperature, top_p, max_tokens, tools, tool_choice, stop, parallel_tool_calls]',
    });
  });
  after(async () => {
    await stack?.close();
    await demo?.close();
  });

  for (const driver of ['builtin', 'claude-code', 'codex'] as const) {
    it(`${driver}: "Create hello.txt saying hi" writes the file, shows it in a tool_result, and answers as the demo`, async () => {
      const jobId = await startJob(stack, 'Create hello.txt saying hi', driver);
      const turn = await settled(stack, jobId);
      assert.equal(turn.state, 'completed', `${turn.state}: ${turn.error ?? ''}`);
      assert.ok(turn.result?.includes(DEMO_LABEL), `result: ${turn.result ?? ''}`);
      assert.equal((await workspaceFile(jobId, '/workspace/hello.txt')).trim(), 'hi');
      const events = await stack.t.db('agent_events').where({ job_id: jobId }).orderBy('event_id').select<Array<{ event_type: string; payload: Json; is_error: boolean }>>('event_type', 'payload', 'is_error');
      const uses = events.filter((e) => e.event_type === 'tool_use');
      const results = events.filter((e) => e.event_type === 'tool_result');
      const names = uses.map((u) => String(u.payload.tool_name));
      const expected = { builtin: ['write_file', 'bash'], 'claude-code': ['Write', 'Bash'], codex: [names[0]!, names[0]!] }[driver];
      assert.deepEqual(names, expected, `the driver's own write and shell tools (events: ${events.map((e) => e.event_type).join(', ')})`);
      assert.ok(results.some((r) => !r.is_error && JSON.stringify(r.payload).includes('hello.txt')), `a tool_result showing the file: ${JSON.stringify(results.map((r) => r.payload))}`);
    });
  }

  for (const driver of ['claude-code', 'codex'] as const) {
    it(`${driver}: "ask me" asks the owner through the CLI's question tool; the answer comes back in the demo's reply`, async () => {
      const jobId = await startJob(stack, 'Please ask me a question', driver);
      const pending = await waitFor(async () => {
        const res = await ownerCall(stack, 'GET', `/v1/agent/jobs/${jobId}/questions?pending=true`);
        return ((await res.json()) as { questions: Json[] }).questions[0];
      }, 'a pending question', 150_000);
      const asked = pending.questions as Array<{ id: string; question: string; options: Array<{ label: string }> }>;
      assert.equal(asked[0]!.question, 'Which colour do you like best?');
      const answered = await ownerCall(stack, 'POST', `/v1/agent/jobs/${jobId}/attempts/${String(pending.attempt_id)}/questions/${encodeURIComponent(String(pending.request_id))}/answer`, { answers: { [asked[0]!.id]: ['Green'] } });
      assert.equal(answered.status, 200, await answered.clone().text());
      const turn = await settled(stack, jobId);
      assert.equal(turn.state, 'completed', `${turn.state}: ${turn.error ?? ''}`);
      assert.match(turn.result ?? '', /your answer was: .*Green/);
    });
  }
});
