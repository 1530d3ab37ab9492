/**
 * The control-plane API a host runner calls with its own credential (`ahc_…`;
 * docs/agent-hosts.md): the heartbeat, an admitted attempt's context, the attempt's inference
 * grant and its repository's clone credential, its driver's events, and the host's container inventory. Served by
 * api/routes/{hosts,host-attempts,grants,agent-events,host-inventory}.ts,
 * called by workers/host-heartbeat.ts, activities/agent/host-api-client.ts and
 * activities/agent/api-event-sink.ts through lib/http/internal-client.ts. The attempt routes
 * answer 409 `Attempt is not current` once the attempt has ended, moved or is another host's.
 */
import { z } from 'zod';
import { AGENT_DRIVERS } from '../settings';
import { EXECUTION_PROFILES, SANDBOX_BACKENDS } from '../execution-profiles';
import { defineEndpoint } from './endpoint';

/** The most slots a host may report, or an operator may save for it. */
export const MAX_HOST_SLOTS = 128;

const text = (max: number) => z.string().max(max);

/** A runtime preflight as a runner reports it (activities/docker/runtime-preflight.ts). */
export const preflightSchema = z.object({
  checked_at: z.string().datetime(),
  host_kernel: text(128),
  backend: z.enum(SANDBOX_BACKENDS),
  shared_kernel_accepted: z.boolean(),
  probes: z.array(z.object({
    runtime: text(64), ok: z.boolean(), guest_kernel: text(128).optional(), error: text(500).optional(), duration_ms: z.number().int().min(0),
  }).strict()).max(8),
  attestations: z.array(text(128)).max(16),
  refused: z.partialRecord(z.enum(EXECUTION_PROFILES), text(700)),
}).strict();

/** `POST /v1/agent/hosts/:hostId/heartbeat`: what the host reports, and the slots it learns. */
export const hostHeartbeat = defineEndpoint({
  name: 'host heartbeat',
  method: 'POST',
  route: '/v1/agent/hosts/:hostId/heartbeat',
  request: z.object({
    slots_total: z.number().int().min(1).max(MAX_HOST_SLOTS),
    runtime: z.string().min(1).max(64),
    runner_version: z.string().min(1).max(64),
    capabilities: z.array(z.string().min(1).max(128)).max(64).default([]),
    /** The runner's last runtime preflight (docs/execution-profiles.md); absent from older runners. */
    preflight: preflightSchema.optional(),
    /** Where owners reach this host's SSH server (docs/ssh.md); absent: the server is off. */
    ssh: z.object({
      host: z.string().min(1).max(253).regex(/^[A-Za-z0-9.:[\]-]+$/, 'a host name or address'),
      port: z.number().int().min(1).max(65535),
    }).strict().optional(),
  }).strict(),
  response: z.object({
    host_id: z.string(),
    /** The operator's saved slots (null: the host's default), reported from the next beat by runner version 2. */
    slots_configured: z.number().int().nullable(),
    /** The lower of the saved number and the reported `slots_total`: what admission uses. */
    slots_effective: z.number().int(),
  }),
});

/**
 * `GET /v1/agent/hosts/:hostId/attempts/:attemptId/context`: what the host needs to run an
 * admitted turn. Kept out of Temporal history: the prompt is the owner's and `env` may hold secrets.
 */
export const attemptContext = defineEndpoint({
  name: 'attempt context',
  method: 'GET',
  route: '/v1/agent/hosts/:hostId/attempts/:attemptId/context',
  request: z.object({}),
  response: z.object({
    attempt_id: z.string(),
    job_id: z.string(),
    turn_seq: z.number().int(),
    prompt: z.string(),
    model: z.string(),
    driver: z.enum(AGENT_DRIVERS),
    group_id: z.string(),
    generation: z.number().int(),
    container_name: z.string(),
    uid: z.number().int(),
    /** Platform base + the owner's variables + the task's own overrides. */
    env: z.record(z.string(), z.string()),
    turn_time_limit_seconds: z.number(),
    /**
     * Present for a chat with a repository: the host captures the turn's diff and uploads it
     * ({@link attemptPatch}), reading at most `max_bytes` of it (docs/publisher.md "Capture").
     */
    capture: z.object({ max_bytes: z.number().int().positive() }).optional(),
    /**
     * Present until a fork's first turn completed: before the driver runs, the host's fork helper
     * makes this member's native session from the original member's (`from_uid`), cut after the
     * original's turn `anchor_seq` (docs/sandboxes.md "Forks"). Absent for a chat that is no fork.
     */
    fork: z.object({
      from_job_id: z.string(), from_uid: z.number().int(), anchor_seq: z.number().int(), historical: z.boolean(),
    }).optional(),
    /** The workspace limits the turn was admitted with (host settings); absent from an older API: the runner's built-in ones. */
    workspace_limits: z.object({
      command_timeout_seconds: z.number().int().positive(),
      command_output_max_bytes: z.number().int().positive(),
      file_read_max_bytes: z.number().int().positive(),
    }).optional(),
  }),
});

/**
 * `POST /v1/agent/hosts/:hostId/attempts/:attemptId/grant`: the turn's inference grant (fetching
 * again rotates the token; docs/agent-grants.md). The body is not read.
 */
export const attemptGrant = defineEndpoint({
  name: 'attempt grant',
  method: 'POST',
  route: '/v1/agent/hosts/:hostId/attempts/:attemptId/grant',
  request: z.object({}),
  response: z.object({
    grant_id: z.string(),
    /** The `agr_…` token: for the turn's driver only; never logged. */
    token: z.string(),
    expires_at: z.string(),
    model: z.string(),
  }),
});

/**
 * `POST /v1/agent/hosts/:hostId/attempts/:attemptId/clone-credential`: the read-only clone
 * credential of the job's repository, minted by the forge that serves it (docs/forges.md), for
 * the attempt currently leased to this host only (409 otherwise). `token` is null when the job
 * has no repository or no configured forge serves it. The runner passes it to git through the
 * environment of each fetch and never writes it down. The body is not read.
 */
export const attemptCloneCredential = defineEndpoint({
  name: 'attempt clone credential',
  method: 'POST',
  route: '/v1/agent/hosts/:hostId/attempts/:attemptId/clone-credential',
  request: z.object({}),
  response: z.object({
    /** Never logged. */
    token: z.string().min(1).max(4096).nullable(),
    expires_at: z.string().nullable(),
  }),
});

/**
 * `POST /v1/agent/hosts/:hostId/attempts/:attemptId/tool-credentials`: the tool relay's credentials
 * for the attempt (docs/mcp.md "Relay credentials"): the attempt-fenced `mcp_…` token and the
 * `amr.…` residency credential. Fetching again rotates both. The body is not read.
 */
export const attemptToolCredentials = defineEndpoint({
  name: 'attempt tool credentials',
  method: 'POST',
  route: '/v1/agent/hosts/:hostId/attempts/:attemptId/tool-credentials',
  request: z.object({}),
  response: z.object({
    /** `mcp_…`: valid only while this attempt is the chat's running one; never logged. */
    mcp_token: z.string(),
    /** `amr.…`: resolves on each call to the chat's current leased attempt in this residency; never logged. */
    residency_credential: z.string(),
    expires_at: z.string(),
    /** Path of the relay's MCP endpoint (streamable HTTP) under the API's URL. */
    relay_mcp_path: z.string(),
  }),
});

/** Event types a host (driver) may write; `turn_*` events belong to the control plane. */
export const DRIVER_EVENT_TYPES = ['message', 'tool_use', 'tool_result', 'retry', 'notice', 'question'] as const;
export type DriverEventType = (typeof DRIVER_EVENT_TYPES)[number];
/** Events per request. */
export const MAX_EVENTS_PER_BATCH = 100;
/** Serialized size of one event's payload. */
export const MAX_EVENT_PAYLOAD_BYTES = 256 * 1024;
/** Request body limit: a full batch of maximal payloads plus envelope overhead. */
export const MAX_INGEST_BODY_BYTES = MAX_EVENTS_PER_BATCH * (MAX_EVENT_PAYLOAD_BYTES + 1024);

const CONTROL_TYPE = /^turn_/;

const hostEventSchema = z.object({
  seq: z.number().int().min(0).max(2_147_483_647),
  event_type: z.string().superRefine((value, ctx) => {
    if (CONTROL_TYPE.test(value)) ctx.addIssue({ code: 'custom', message: `'${value}' is a control-plane event type; hosts may write only ${DRIVER_EVENT_TYPES.join(', ')}` });
    else if (!(DRIVER_EVENT_TYPES as readonly string[]).includes(value)) ctx.addIssue({ code: 'custom', message: `unknown event type; expected one of ${DRIVER_EVENT_TYPES.join(', ')}` });
  }),
  payload: z.record(z.string(), z.unknown()).superRefine((value, ctx) => {
    if (Buffer.byteLength(JSON.stringify(value)) > MAX_EVENT_PAYLOAD_BYTES) {
      ctx.addIssue({ code: 'custom', message: `payload is larger than ${MAX_EVENT_PAYLOAD_BYTES} bytes serialized` });
    }
  }),
  is_error: z.boolean().optional(),
}).strict();

/**
 * `POST /v1/agent/hosts/:hostId/attempts/:attemptId/events`: a batch of the attempt's driver
 * events, numbered by the host from 0; the API dedupes by attempt and seq, so a retried batch
 * never stores twice (already-stored seqs count as accepted).
 */
export const attemptEvents = defineEndpoint({
  name: 'attempt events',
  method: 'POST',
  route: '/v1/agent/hosts/:hostId/attempts/:attemptId/events',
  request: z.object({
    events: z.array(hostEventSchema).min(1).max(MAX_EVENTS_PER_BATCH).superRefine((events, ctx) => {
      const seen = new Set<number>();
      events.forEach((e, index) => {
        if (seen.has(e.seq)) ctx.addIssue({ code: 'custom', path: [index, 'seq'], message: `seq ${e.seq} appears twice in the batch` });
        seen.add(e.seq);
      });
    }),
  }).strict(),
  response: z.object({ accepted: z.number().int() }),
});

/** Bounds of a native question (docs/agent-drivers.md "Native questions"): the CLI is untrusted. */
export const QUESTION_LIMITS = { questions: 8, options: 8, text: 4000, label: 500, header: 200, requestId: 200 } as const;

/**
 * The payload of a `question` event: a native CLI asks the chat's owner (Claude Code's
 * `AskUserQuestion`, Codex's `request_user_input`). Storing it opens the question for the owner's
 * answer route; the host then waits for the answer ({@link attemptQuestion}).
 */
export const questionEventPayload = z.object({
  request_id: z.string().min(1).max(QUESTION_LIMITS.requestId),
  cli: z.enum(['codex', 'claude-code']),
  questions: z.array(z.object({
    id: z.string().min(1).max(QUESTION_LIMITS.text),
    header: z.string().max(QUESTION_LIMITS.header),
    question: z.string().min(1).max(QUESTION_LIMITS.text),
    multi_select: z.boolean(),
    options: z.array(z.object({ label: z.string().min(1).max(QUESTION_LIMITS.label), description: z.string().max(QUESTION_LIMITS.text) }).strict()).max(QUESTION_LIMITS.options),
  }).strict()).min(1).max(QUESTION_LIMITS.questions).superRefine((questions, ctx) => {
    const seen = new Set<string>();
    questions.forEach((q, index) => {
      if (seen.has(q.id)) ctx.addIssue({ code: 'custom', path: [index, 'id'], message: 'two questions have this id' });
      seen.add(q.id);
    });
  }),
}).strict();

export const QUESTION_STATES = ['pending', 'answered', 'declined', 'expired'] as const;

/** A question's state as the host reads it (one schema object per endpoint: contract tests spy on each). */
const questionState = () => z.object({
  state: z.enum(QUESTION_STATES),
  /** The owner's answers by question id (`answered`). */
  answers: z.record(z.string(), z.array(z.string())).nullable(),
  /** The owner's decline message (`declined`). */
  message: z.string().nullable(),
});

/** `GET …/attempts/:attemptId/questions/:requestId`: where the owner's answer stands (the host polls it). */
export const attemptQuestion = defineEndpoint({
  name: 'attempt question',
  method: 'GET',
  route: '/v1/agent/hosts/:hostId/attempts/:attemptId/questions/:requestId',
  request: z.object({}),
  response: questionState(),
});

/**
 * `POST …/attempts/:attemptId/questions/:requestId/expire`: the host stops waiting (its wait limit
 * or the turn's end); a pending question becomes `expired`. Answers the final state: an answer that
 * came first wins.
 */
export const attemptQuestionExpire = defineEndpoint({
  name: 'attempt question expire',
  method: 'POST',
  route: '/v1/agent/hosts/:hostId/attempts/:attemptId/questions/:requestId/expire',
  request: z.object({}).strict(),
  response: questionState(),
});

/** A git object id as a sandbox must report it (SHA-1 or SHA-256, lower-case hex). */
export const TREE_ID_PATTERN = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;
const treeId = z.string().regex(TREE_ID_PATTERN, 'a git object id (40 or 64 lower-case hex digits)');

/** Request body limit of a patch upload holding `maxBytes` of patch (base64 and envelope). */
export function patchBodyLimit(maxBytes: number): number {
  return Math.ceil(maxBytes / 3) * 4 + 64 * 1024;
}

/**
 * `POST /v1/agent/hosts/:hostId/attempts/:attemptId/patch`: what the host captured of the turn
 * (docs/publisher.md "Upload"). Accepted only while the attempt is the turn's running attempt on
 * this host (409 otherwise); one row per turn, so a repeated upload changes nothing (`stored: false`).
 */
export const attemptPatch = defineEndpoint({
  name: 'attempt patch',
  method: 'POST',
  route: '/v1/agent/hosts/:hostId/attempts/:attemptId/patch',
  request: z.discriminatedUnion('status', [
    z.object({
      status: z.literal('captured'), start_tree: treeId, end_tree: treeId,
      bytes: z.number().int().min(0), patch_base64: z.string().regex(/^[A-Za-z0-9+/]*={0,2}$/, 'base64'),
    }).strict(),
    z.object({ status: z.literal('too_large'), start_tree: treeId, end_tree: treeId, bytes: z.number().int().min(0) }).strict(),
    z.object({ status: z.literal('failed'), error: z.string().min(1).max(1000) }).strict(),
  ]),
  response: z.object({ turn_id: z.string(), stored: z.boolean(), publish_state: z.string() }),
});

/** Docker's container states, as a host reports them. */
export const CONTAINER_STATES = ['created', 'running', 'paused', 'restarting', 'removing', 'exited', 'dead'] as const;
export type ContainerState = (typeof CONTAINER_STATES)[number];
/** Containers per inventory report: far above what one host can hold (its slots are at most 128). */
export const MAX_INVENTORY_CONTAINERS = 2000;
/** Request body limit of an inventory report. */
export const MAX_INVENTORY_BODY_BYTES = 2 * 1024 * 1024;

const reportedContainer = z.object({
  /** Docker's full container id. */
  container_id: z.string().regex(/^[0-9a-f]{64}$/, 'a full Docker container id (64 hex digits)'),
  /** Its name without Docker's leading `/`. */
  name: z.string().min(1).max(256),
  /** The `agent.group` and `agent.generation` labels as found (null: absent). */
  group_id: z.string().max(256).nullable(),
  generation: z.string().max(64).nullable(),
  state: z.enum(CONTAINER_STATES),
  /** CPU in percent of one CPU over Docker's sampling interval; null when not running or unmeasured. */
  cpu_percent: z.number().min(0).max(1_000_000).nullable(),
  /** Memory in use without the page cache, bytes; null when not running or unmeasured. */
  memory_bytes: z.number().int().min(0).nullable(),
  /** Bytes of the container's writable layer (`SizeRw`); null when not measured in this report. */
  disk_bytes: z.number().int().min(0).nullable(),
}).strict();

/**
 * `POST /v1/agent/hosts/:hostId/inventory` (every `AGENT_INVENTORY_REFRESH_SECONDS`, default 30 s):
 * every container on the host labelled `agent.managed=true` and `agent.host=<hostId>`, with its
 * reading. The API reconciles it with PostgreSQL (docs/sandboxes.md "Reconciler") and answers the
 * ids of orphan containers past their grace period; the host removes exactly those.
 */
export const hostInventory = defineEndpoint({
  name: 'host inventory',
  method: 'POST',
  route: '/v1/agent/hosts/:hostId/inventory',
  request: z.object({
    containers: z.array(reportedContainer).max(MAX_INVENTORY_CONTAINERS).superRefine((containers, ctx) => {
      const seen = new Set<string>();
      containers.forEach((c, index) => {
        if (seen.has(c.container_id)) ctx.addIssue({ code: 'custom', path: [index, 'container_id'], message: 'the container appears twice in the report' });
        seen.add(c.container_id);
      });
    }),
  }).strict(),
  response: z.object({
    /** Orphan containers past their grace period: remove these, and nothing else. */
    remove: z.array(z.string()),
    /** Reported containers that are a live group's recorded container. */
    observed: z.number().int(),
    /** Reported containers that are orphans (removal ordered or still in their grace period). */
    orphans: z.number().int(),
    /** Groups this report marked `dead` (their recorded container is gone). */
    marked_dead: z.number().int(),
  }),
});

/** Every endpoint of the host runner's API. */
export const hostApiEndpoints = [hostHeartbeat, attemptContext, attemptGrant, attemptCloneCredential, attemptToolCredentials, attemptEvents, attemptQuestion, attemptQuestionExpire, attemptPatch, hostInventory] as const;
