/**
 * Every activity the control worker registers (task queue `control`), built from its deps. Tests
 * build the same set over their own database and gateway.
 */
import type { Client } from '@temporalio/client';
import type { Db } from '../../lib/db';
import { createLogger, type Logger } from '../../lib/logger';
import type { ObjectStore } from '../../lib/object-store';
import type { Settings } from '../../lib/settings';
import { createGrantActivities } from '../grants/grant-activities';
import type { GatewayGrantClient } from '../../agent/grants/gateway-grant-client';
import { createChatActivities } from './chat-activities';
import { createHostWorkflowActivities } from './host-workflow-activities';
import { createDeletionActivities } from './deletion-activities';
import { createIdleStopActivities } from './idle-stop-activities';
import { createPublicStatsActivities, type PublicStatsJob } from './public-stats-activities';
import { createSandboxGroupActivities } from './sandbox-group-activities';
import { createTitleActivities, type TitleLimits } from './title-activities';
import { defaultValues } from '../../agent/settings/admin-settings';
import { turnLimitsFrom } from '../../agent/settings/host-settings';
import type { AgentSettings } from '../../agent/settings/settings-sync';
import { PublishDelivery } from '../../agent/source/publish-delivery';
import { ChatDelivery } from '../../agent/jobs/chat-delivery';
import type { ExecutionProfile } from '../../lib/execution-profiles';
import type { Forge } from '../forge/forge';
import { createPublishActivities, type PrTitleGenerator } from './publish-activities';
import { createPrTitleGenerator } from './pr-title';

export interface ControlActivityDeps {
  db: Db;
  settings: Settings;
  grants: GatewayGrantClient;
  /** Temporal client of activities that start or update other workflows (the deletion sweep's and the idle stop's sandbox actions). */
  temporal?: Client;
  /** Logger of activities that log (title generation); default a `control-activities` logger at LOG_LEVEL. */
  log?: Logger;
  /** Title-generation limits (tests shorten them); default: five calls within 120 s, 10 s each. */
  titleLimits?: Partial<TitleLimits>;
  /** Where sandbox archives go (docs/sandboxes.md "Archives"); without one, archive actions are refused. */
  objectStore?: ObjectStore;
  /** The synced admin and host settings: admission reads the turn limits, the idle stop its timeout, from them (default: the environment's). */
  agentSettings?: AgentSettings;
  /**
   * The forge serving a job's repository (docs/publisher.md). With it and `temporal`, a completed
   * turn's patch is published; without it publications wait (and fail once started).
   */
  forgeFor?: (repo: string) => Forge | undefined;
  /** Pull-request title generation; default: through the gateway with the job's model when title generation is on, else the prompt title. */
  generatePrTitle?: PrTitleGenerator;
  /** The public stats job (docs/public-stats.md), composed by the worker; without it the daily run fails naming the cause. */
  publicStats?: PublicStatsJob;
}

export function createControlActivities(deps: ControlActivityDeps) {
  const log = deps.log ?? createLogger({ name: 'control-activities', level: deps.settings.LOG_LEVEL });
  const hostSettings = () => deps.agentSettings?.current ?? defaultValues(deps.settings);
  return {
    ...createChatActivities({
      db: deps.db, settings: deps.settings, turnLimits: () => turnLimitsFrom(hostSettings()),
      ...(deps.temporal && deps.forgeFor ? { publisher: new PublishDelivery(deps.temporal, deps.settings, log) } : {}),
      ...(deps.temporal ? { claims: { wake: chatWaker(deps.temporal, deps.settings, log), log } } : {}),
    }),
    ...createSandboxGroupActivities({ db: deps.db, settings: deps.settings, log, ...(deps.objectStore ? { objectStore: deps.objectStore } : {}) }),
    ...createHostWorkflowActivities({ db: deps.db }),
    ...createDeletionActivities({ db: deps.db, settings: deps.settings, ...(deps.temporal ? { temporal: deps.temporal } : {}) }),
    ...createIdleStopActivities({
      db: deps.db, settings: deps.settings, log, idleTimeoutSeconds: () => hostSettings().idle_timeout_seconds, ...(deps.temporal ? { temporal: deps.temporal } : {}),
    }),
    ...createGrantActivities({ db: deps.db, grants: deps.grants, settings: deps.settings }),
    ...createPublishActivities({
      db: deps.db, log, forgeFor: deps.forgeFor ?? (() => undefined), ...prTitles(deps, log),
    }),
    ...createTitleActivities({ db: deps.db, grants: deps.grants, settings: deps.settings, log, ...(deps.titleLimits ? { limits: deps.titleLimits } : {}) }),
    ...createPublicStatsActivities({ job: deps.publicStats }),
  };
}

/** The pull-request title generator of the control activities (docs/publisher.md "Title"). */
function prTitles(deps: ControlActivityDeps, log: Logger): { generateTitle?: PrTitleGenerator } {
  if (deps.generatePrTitle) return { generateTitle: deps.generatePrTitle };
  if (!deps.settings.AGENT_TITLE_GENERATION_ENABLED) return {};
  return { generateTitle: createPrTitleGenerator({ grants: deps.grants, gatewayUrl: () => deps.settings.AGENT_GATEWAY_URL, log, ...(deps.titleLimits ? { limits: deps.titleLimits } : {}) }) };
}

/** Wakes a chat workflow whose turn a host's claim admitted (docs/agent-hosts.md "The claim queue"). */
function chatWaker(temporal: Client, settings: Settings, log: Logger): (job: { jobId: string; ownerId: number; executionProfile: ExecutionProfile }) => Promise<boolean> {
  const delivery = new ChatDelivery(temporal, settings, log);
  return (job) => delivery.wake(job);
}
