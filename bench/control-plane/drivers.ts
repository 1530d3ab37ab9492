/**
 * Warm turns by driver (issue 26): the built-in driver next to the native ones (Codex CLI, Claude
 * Code in the sandbox through the model relay), from the same run. Per driver one chat is created
 * and its first turn (container created) left out; then `turns` follow-up turns run one at a time,
 * each timed from the POST's answer to the turn's end (`finished_at` in PostgreSQL). The fake
 * upstream answers every model call with one short final text, so a turn is one model call and the
 * figure is the driver's own cost: process start, relay, session resume, event normalization.
 */
import type { Behaviour } from '../../test/support/fake-upstream';
import { AGENT_MODEL, ownerCall } from '../../test/support/agent-stack';
import { addTurn, type BenchStack } from './client';
import { waitSettled } from './throughput';

export const DRIVERS = ['builtin', 'codex', 'claude-code'] as const;

export interface DriverTurns {
  driver: (typeof DRIVERS)[number];
  /** ms from each follow-up turn's POST to its end. */
  turnMs: number[];
  states: Record<string, number>;
}

const ANSWER = 'ok';
const answer: Behaviour = {
  kind: 'dynamic',
  choose: (request) => ((request.body as { stream?: unknown } | undefined)?.stream === true ? { kind: 'sse', pieces: [ANSWER] } : { kind: 'json', content: ANSWER }),
};

async function turnEnded(stack: BenchStack, jobId: string, seq: number, timeoutMs: number): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const row = await stack.observer('agent_turns').where({ job_id: jobId, seq }).first<{ state: string } | undefined>('state');
    if (row && ['completed', 'failed', 'cancelled'].includes(row.state)) return row.state;
    if (Date.now() > deadline) throw new Error(`turn ${seq} of ${jobId} did not end in ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export async function measureDriverTurns(stack: BenchStack, options: { turns: number; progress: (line: string) => void }): Promise<DriverTurns[]> {
  stack.upstream.setDefault(answer);
  const results: DriverTurns[] = [];
  try {
    for (const driver of DRIVERS) {
      const res = await ownerCall(stack, 'POST', '/v1/agent/jobs', { prompt: 'Say ok.', model: AGENT_MODEL, repo: null, driver });
      if (res.status !== 201) throw new Error(`create ${driver} chat: HTTP ${res.status} ${await res.text()}`);
      const { job_id: jobId } = (await res.json()) as { job_id: string };
      await waitSettled(stack, [jobId], { timeoutMs: 180_000, label: `${driver} first turn` });
      const result: DriverTurns = { driver, turnMs: [], states: {} };
      for (let i = 0; i < options.turns; i += 1) {
        const posted = performance.now();
        const seq = await addTurn(stack, jobId, 'Say ok again.');
        const state = await turnEnded(stack, jobId, seq, 180_000);
        result.turnMs.push(performance.now() - posted);
        result.states[state] = (result.states[state] ?? 0) + 1;
      }
      options.progress(`drivers: ${driver} ${options.turns} warm turns, states ${JSON.stringify(result.states)}`);
      results.push(result);
    }
  } finally {
    stack.upstream.setDefault(undefined);
  }
  return results;
}
