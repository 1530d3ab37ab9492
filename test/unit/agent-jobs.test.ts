/**
 * Pure rules of the owner API: initial titles, conversation state,
 * repository entitlement, and the job body schema.
 */
import assert from 'node:assert/strict';
import { titleFromPrompt, cutToChars, TITLE_MAX_CHARS } from '../../agent/jobs/titles';
import { conversationState } from '../../agent/jobs/job-views';
import { parseAllowlist, repoEntitled } from '../../agent/jobs/entitlement';
import { createJobSchema } from '../../agent/jobs/job-commands';

describe('agent jobs: titles', () => {
  it('takes the first meaningful line and cuts it to 36 characters', () => {
    assert.equal(titleFromPrompt('Fix the login bug'), 'Fix the login bug');
    assert.equal(titleFromPrompt('\n\n   \n```\n---\n#\nRefactor the parser please\nmore'), 'Refactor the parser please');
    assert.equal(titleFromPrompt('# Heading here\nbody'), 'Heading here');
    assert.equal(titleFromPrompt('- bullet item'), 'bullet item');
    const long = 'Implement the whole payment flow including refunds and webhooks';
    assert.equal(titleFromPrompt(long), long.slice(0, TITLE_MAX_CHARS).trimEnd());
    assert.equal(Array.from(titleFromPrompt(long)).length <= TITLE_MAX_CHARS, true);
  });

  it('never splits a character made of two UTF-16 units and falls back when nothing is meaningful', () => {
    const emoji = '😀'.repeat(40);
    assert.equal(cutToChars(emoji, 36), '😀'.repeat(36));
    assert.equal(titleFromPrompt('```\n---\n\n'), 'Untitled chat');
  });
});

describe('agent jobs: conversation_state', () => {
  const turns = (...states: string[]) => states.map((state, i) => ({ seq: i + 1, state }));
  it('running beats queued; queued when nothing runs', () => {
    assert.equal(conversationState(turns('completed', 'running', 'queued')), 'running');
    assert.equal(conversationState(turns('completed', 'queued')), 'queued');
    assert.equal(conversationState(turns('queued')), 'queued');
  });
  it('with no active turn the latest turn decides failed or idle', () => {
    assert.equal(conversationState(turns('completed', 'failed')), 'failed');
    assert.equal(conversationState(turns('failed', 'completed')), 'idle');
    assert.equal(conversationState(turns('failed', 'cancelled')), 'idle');
    assert.equal(conversationState([]), 'idle');
    assert.equal(conversationState([{ seq: 3, state: 'failed' }, { seq: 1, state: 'completed' }]), 'failed');
  });
});

describe('agent jobs: repository entitlement', () => {
  const allow = parseAllowlist(' acme/app , https://git.example.com/team/ ,');
  it('allows exact entries and URL prefixes ending in a slash, and fails closed otherwise', () => {
    assert.deepEqual(allow, ['acme/app', 'https://git.example.com/team/']);
    assert.equal(repoEntitled('acme/app', allow), true);
    assert.equal(repoEntitled('acme/app2', allow), false);
    assert.equal(repoEntitled('https://git.example.com/team/svc.git', allow), true);
    assert.equal(repoEntitled('https://git.example.com/teamx/svc.git', allow), false);
    assert.equal(repoEntitled('acme/app', []), false);
  });
});

describe('agent jobs: create body', () => {
  const ok = { prompt: 'hi', model: 'm', repo: null };
  it('accepts a temporary workspace and refuses repo-only fields with repo: null', () => {
    assert.equal(createJobSchema.safeParse(ok).success, true);
    for (const extra of [{ base_ref: 'main' }, { base_sha: 'abcdef1' }, { environment_id: 'env1' }]) {
      const parsed = createJobSchema.safeParse({ ...ok, ...extra });
      assert.equal(parsed.success, false);
      assert.equal(parsed.error?.issues[0]?.path[0], Object.keys(extra)[0]);
    }
    assert.equal(createJobSchema.safeParse({ ...ok, repo: 'acme/app', base_ref: 'main' }).success, true);
    assert.equal(createJobSchema.safeParse({ ...ok, repo: 'https://git.example.com/acme/app.git' }).success, true);
    for (const repo of ['https://user:token@git.example.com/acme/app.git', 'https://token@git.example.com/acme/app.git']) {
      const parsed = createJobSchema.safeParse({ ...ok, repo });
      assert.equal(parsed.success, false, repo);
      assert.match(parsed.error?.issues[0]?.message ?? '', /credentials/);
    }
  });
  it('requires the repo key, a non-empty prompt and known fields only', () => {
    assert.equal(createJobSchema.safeParse({ prompt: 'hi', model: 'm' }).success, false);
    assert.equal(createJobSchema.safeParse({ ...ok, prompt: '   ' }).success, false);
    assert.equal(createJobSchema.safeParse({ ...ok, prompt: 'x'.repeat(32_001) }).success, false);
    assert.equal(createJobSchema.safeParse({ ...ok, surprise: 1 }).success, false);
    assert.equal(createJobSchema.safeParse({ ...ok, env: { 'BAD-NAME': 'x' } }).success, false);
  });
});
