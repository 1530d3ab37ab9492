/**
 * Control-queue activities of the publish workflow (docs/publisher.md "Publish"): trusted, outside
 * every sandbox. They read the turn's patch from PostgreSQL, push it through the patch gate as one
 * commit on `agent/<job id>` with the forge's repo token, find or open the chat's one draft pull
 * request (titled within the task-title limits, the prompt title when generation fails), and
 * settle the publication. Each is idempotent; the gate's refusal and a repository no forge serves
 * are non-retryable failures whose message is the owner's. No token reaches a log, an event or an
 * error message.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { Db } from '../../lib/db';
import type { Logger } from '../../lib/logger';
import { titleFromPrompt } from '../../agent/jobs/titles';
import {
  branchOf, earlierPublishPending, publishContext, recordPublished, recordPublishFailed, type PublishContext, type PublishFailureReason,
} from '../../agent/source/publications';
import { PublishFailureType } from '../../workflows/definitions/publish';
import { ForgeError, type Forge, type ForgeRepo } from '../forge/forge';
import { PatchGateError, publishCommit } from '../forge/publish-git';

/** A generated pull-request title, or why there is none (a reason code for the log, never prompt text). */
export type PrTitleAnswer = { title: string } | { reason: string };

/** Generates a pull-request title for a chat (the title machinery; docs/publisher.md "Title"). */
export type PrTitleGenerator = (input: { jobId: string; turnId: string; ownerId: number; model: string; prompt: string; patch: Buffer }) => Promise<PrTitleAnswer>;

export interface PublishActivityDeps {
  db: Db;
  log: Logger;
  /** The forge serving a job's `repo` string, or undefined when none does. */
  forgeFor: (repo: string) => Forge | undefined;
  /** Title generation; without it the prompt title is used. */
  generateTitle?: PrTitleGenerator;
  /** Author and committer of published commits. */
  author?: { name: string; email: string };
}

const DEFAULT_AUTHOR = { name: 'Agent', email: 'agent@agent.invalid' };

/**
 * A failure of the forge work as the workflow sees it: the gate's refusal and a forge's refusal
 * (`refused`, `not_found`, `bad_answer`) are not retried; anything else (network, 5xx, a push
 * refused because the branch moved) is. `secret` is scrubbed from the message.
 */
function publishFailure(err: unknown, secret?: string): ApplicationFailure {
  const raw = err instanceof Error ? err.message : String(err);
  const message = secret ? raw.split(secret).join('***') : raw;
  if (err instanceof PatchGateError) return ApplicationFailure.nonRetryable(message, PublishFailureType.gateRefused);
  if (err instanceof ForgeError && err.failure !== 'unavailable') return ApplicationFailure.nonRetryable(message, PublishFailureType.forgeRefused);
  return ApplicationFailure.retryable(message, 'PublishForgeFailed');
}

export function createPublishActivities(deps: PublishActivityDeps) {
  const { db, log } = deps;

  async function load(turnId: string): Promise<PublishContext> {
    const context = await publishContext(db, turnId, { withPatch: true });
    if (!context) throw ApplicationFailure.nonRetryable(`Turn ${turnId} has no patch`, PublishFailureType.unsupportedRepo);
    return context;
  }

  function forgeOf(context: PublishContext): { forge: Forge; repo: ForgeRepo } {
    const repoString = context.job.repo ?? '';
    const forge = repoString ? deps.forgeFor(repoString) : undefined;
    const repo = forge?.repoOf(repoString);
    if (!forge || !repo) throw ApplicationFailure.nonRetryable('No source-control forge of this deployment serves the chat\'s repository, so its changes cannot be published', PublishFailureType.unsupportedRepo);
    return { forge, repo };
  }

  async function titleOf(context: PublishContext): Promise<string> {
    const fallback = titleFromPrompt(context.firstPrompt);
    if (!deps.generateTitle) return fallback;
    const answer = await deps.generateTitle({
      jobId: context.job.job_id, turnId: context.patch.turn_id, ownerId: Number(context.job.owner_id), model: context.job.model,
      prompt: context.firstPrompt, patch: context.patch.patch ?? Buffer.alloc(0),
    }).catch(() => ({ reason: 'error' }));
    if ('title' in answer) return answer.title;
    log.warn({ event: 'agent_pr_title_generation_failed', job_id: context.job.job_id, turn_id: context.patch.turn_id, reason: answer.reason }, 'pull request title generation failed; the prompt title is used');
    return fallback;
  }

  return {
    /** Whether the turn's patch can be published now, must wait for an earlier turn's, or is not to be published. */
    async publishReadiness(input: { turnId: string }): Promise<{ kind: 'ready' } | { kind: 'wait' } | { kind: 'skip'; reason: string }> {
      const context = await publishContext(db, input.turnId);
      if (!context) return { kind: 'skip', reason: 'no_patch' };
      if (context.patch.publish_state !== 'pending') return { kind: 'skip', reason: `already_${context.patch.publish_state}` };
      if (context.turnState !== 'completed') return { kind: 'skip', reason: 'turn_not_completed' };
      if (context.job.deleted_at !== null) return { kind: 'skip', reason: 'chat_deleted' };
      if (await earlierPublishPending(db, context.job.job_id, context.patch.turn_seq)) return { kind: 'wait' };
      return { kind: 'ready' };
    },

    /** The turn's commit on the chat's branch, made and pushed through the patch gate, or found there. */
    async pushTurnCommit(input: { turnId: string }): Promise<{ branch: string; commitSha: string }> {
      const context = await load(input.turnId);
      const { forge, repo } = forgeOf(context);
      const { patch } = context;
      if (!context.job.base_sha || !patch.start_tree || !patch.end_tree || !patch.patch) {
        throw ApplicationFailure.nonRetryable('The turn has no complete capture to publish', PublishFailureType.gateRefused);
      }
      const branch = branchOf(context.job.job_id);
      const beat = setInterval(() => Context.current().heartbeat(), 5000);
      let secret: string | undefined;
      try {
        const token = await forge.repoToken(repo);
        secret = token.token;
        const authHeader = forge.gitAuthHeader(token);
        const turnPrompt = await db('agent_turns').where({ turn_id: input.turnId }).first<{ prompt: string }>('prompt');
        const published = await publishCommit({
          url: forge.gitUrl(repo), authHeader, branch, baseSha: context.job.base_sha, turnId: input.turnId,
          startTree: patch.start_tree, endTree: patch.end_tree, patch: Buffer.from(patch.patch),
          message: `${titleFromPrompt(turnPrompt?.prompt ?? '')}\n\nTurn ${patch.turn_seq} of chat ${context.job.job_id}.`, author: deps.author ?? DEFAULT_AUTHOR,
        });
        log.info({ event: 'agent_turn_commit_pushed', job_id: context.job.job_id, turn_id: input.turnId, commit: published.commitSha, created: published.created }, 'turn commit on the chat branch');
        return { branch, commitSha: published.commitSha };
      } catch (err) {
        throw publishFailure(err, secret);
      } finally {
        clearInterval(beat);
      }
    },

    /** The chat's open pull request from its branch, or a new draft one (base: the job's `base_ref`, else the forge's default branch). */
    async ensurePullRequest(input: { turnId: string; branch: string }): Promise<{ number: number; url: string; draft: boolean }> {
      const context = await load(input.turnId);
      const { forge, repo } = forgeOf(context);
      try {
        const found = await forge.findPullRequest(repo, input.branch);
        if (found) return { number: found.number, url: found.url, draft: found.draft };
        const base = context.job.base_ref ?? await forge.defaultBranch(repo);
        const title = await titleOf(context);
        const opened = await forge.openDraftPullRequest(repo, {
          head: input.branch, base, title,
          body: `Opened by the agent for the chat "${context.job.title}". Each commit is one turn of the chat (trailer \`Agent-Turn\`); the chat adds commits here as it goes on.`,
        });
        log.info({ event: 'agent_pull_request_opened', job_id: context.job.job_id, turn_id: input.turnId, number: opened.number }, 'draft pull request opened');
        return { number: opened.number, url: opened.url, draft: opened.draft };
      } catch (err) {
        throw publishFailure(err);
      }
    },

    /** Records the publication (pending → published) with the owner's `pull_request` event. */
    async completePublication(input: { turnId: string; branch: string; commitSha: string; pullRequest: { number: number; url: string; draft: boolean } }): Promise<void> {
      await recordPublished(db, input);
    },

    /** Records a failed publication (pending → failed) with the owner's `publish_failed` event. */
    async failPublication(input: { turnId: string; reason: PublishFailureReason; message: string }): Promise<void> {
      await recordPublishFailed(db, input);
    },
  };
}

export type PublishActivities = ReturnType<typeof createPublishActivities>;
