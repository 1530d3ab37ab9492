/**
 * The one definition of the environment every process reads.
 *
 * Each `main.ts` calls {@link loadSettings} once and passes the result down; no other module
 * reads `process.env`. Every variable carries a comment saying what it does and its default.
 */
import { z } from 'zod';
import { EXECUTION_PROFILES, SANDBOX_BACKENDS } from './execution-profiles';

/** The agent drivers a chat may use (docs/agent-drivers.md). */
export const AGENT_DRIVERS = ['builtin', 'cli', 'codex', 'claude-code'] as const;
export type AgentDriverKind = (typeof AGENT_DRIVERS)[number];

import { flag, optionalString, optionalUrl, port } from './settings-fields';
import { refineToolSettings, toolSettingsShape } from './settings-tools';

export type { McpStdioTemplates } from './settings-tools';

/** `AGENT_API_URL`'s default: the API on this machine's default port. */
export const DEFAULT_AGENT_API_URL = 'http://127.0.0.1:8081';

export const settingsShape = {
  // ---- process and logging ----
  /** `production` turns off pretty conveniences; anything else is development. Default `development`. */
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  /** pino level: fatal, error, warn, info, debug, trace, silent. Default `info`. */
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** Seconds a stopping process waits for in-flight HTTP requests and worker tasks. Default 10. */
  SHUTDOWN_GRACE_SECONDS: z.coerce.number().positive().default(10),

  // ---- gateway process ----
  /** Interface the gateway listens on. Default `0.0.0.0`. */
  GATEWAY_HOST: z.string().default('0.0.0.0'),
  /** Port of the inference gateway. Default 8080. */
  GATEWAY_PORT: port(8080),
  /**
   * Directory of the built browser console (`npm run build` writes `dist/console`), served by the
   * gateway under `/console/` (docs/console.md). Relative paths resolve against the working
   * directory. A missing directory makes `/console/` answer 503 saying how to build it.
   */
  CONSOLE_DIR: z.string().min(1).default('dist/console'),
  /** `npm start` only: loopback port of the scripted demo upstream, when it starts (docs/demo-model.md). Default 0: any free port. */
  DEMO_MODEL_PORT: port(0),
  /**
   * Base URL (`http:` or `https:`) of the control-plane API the gateway forwards `/v1/agent`,
   * `/v1/agent/*`, `/admin/agent/*` and `/api/admin/agent/pgadmin/*` to, so people and browsers use
   * one origin (docs/one-origin.md). Unset (default): those paths answer 404 saying where the API is.
   */
  GATEWAY_AGENT_API_URL: optionalUrl().refine((v) => v === undefined || /^https?:\/\//i.test(v), 'must be an http:// or https:// URL'),
  /** Canonical path of the models registry file (docs/registry.md); beats `MODELS_CONFIG` and the manifest. */
  MODELS_CONFIG_PATH: optionalString(),
  /** Older name of `MODELS_CONFIG_PATH`; used only when the canonical name is unset. */
  MODELS_CONFIG: optionalString(),
  /** Canonical path of the routing file (docs/routing-file.md). */
  ROUTING_CONFIG_PATH: optionalString(),
  /** Older name of `ROUTING_CONFIG_PATH`. */
  ROUTING_CONFIG: optionalString(),
  /** Path of the alerts file; by default a file that is not shipped (built-in thresholds). */
  ALERTS_CONFIG_PATH: optionalString(),
  /** `true`: the gateway's in-process alert engine posts chat-webhook cards (docs/alerts.md). Default false. */
  ALERTS_ENABLED: flag(false),
  /** Incoming-webhook URL the alert cards are posted to; beats `SLACK_WEBHOOK_URL`. A secret (its path is the credential). */
  SLACK_ALERTS_WEBHOOK_URL: optionalUrl().refine((v) => v === undefined || /^https?:\/\//i.test(v), 'must be an http:// or https:// URL'),
  /** Fallback webhook URL for alert cards when `SLACK_ALERTS_WEBHOOK_URL` is unset. A secret. */
  SLACK_WEBHOOK_URL: optionalUrl().refine((v) => v === undefined || /^https?:\/\//i.test(v), 'must be an http:// or https:// URL'),
  /** Path of the distribution manifest (docs/site-config.md). */
  DISTRIBUTION_CONFIG_PATH: optionalString(),
  /** `dark` (default: validate and log only) or `active`; any other value closes sign-up. Kept raw. */
  DISTRIBUTION_CONFIG_MODE: z.string().default('dark'),
  /** `false`/`0`: inference needs no key and every caller is admin. Default true. */
  USER_AUTH_ENABLED: flag(true),
  /** `1`: honour `X-Forwarded-For` from peers in `TRUSTED_PROXIES` (docs/client-address.md). Default off. */
  TRUST_PROXY_HEADERS: flag(false),
  /** `1`: honour the CDN connecting-IP headers from peers in `TRUSTED_CLOUDFLARE_NETWORKS`; needs `TRUST_PROXY_HEADERS=1`. Default off. */
  TRUST_CDN_HEADERS: flag(false),
  /** `1`: honour `X-Real-IP` from `TRUSTED_PROXIES` peers when XFF is absent; needs `TRUST_PROXY_HEADERS=1`. Default off. */
  TRUST_X_REAL_IP: flag(false),
  /** Comma-separated CIDRs of proxies allowed to assert `X-Forwarded-For`/`X-Real-IP`; an invalid entry stops startup. */
  TRUSTED_PROXIES: optionalString(),
  /** Comma-separated CIDRs of the CDN's edge networks (env form of the `trusted_cloudflare_networks` setting). */
  TRUSTED_CLOUDFLARE_NETWORKS: optionalString(),
  /** Comma-separated CIDRs of private client networks whose socket peers count as clients. */
  TRUSTED_DIRECT_CLIENT_NETWORKS: optionalString(),
  /** Static admin credential for `/admin/*` (`Authorization: Bearer`). Unset: only admin JWTs. A secret. */
  ADMIN_TOKEN: optionalString(),
  /** Bearer credential of Prometheus scrapes (`GET /metrics` on the gateway and the API, docs/metrics.md); unset: only administrators may scrape. A secret. */
  METRICS_TOKEN: optionalString(),
  // ---- identity (docs/identity.md) ----
  /** HMAC key signing access tokens (JWT, HS256); at least 32 bytes. Unset: a random key per process (tokens die with it; logged). A secret. */
  AUTH_JWT_SECRET: optionalString().refine((v) => v === undefined || Buffer.byteLength(v) >= 32, 'must be at least 32 bytes'),
  /** Lifetime of an access token, seconds. Default 900. */
  ACCESS_TOKEN_TTL_SECONDS: z.coerce.number().int().min(30).max(86_400).default(900),
  /**
   * Seconds between re-reads of the rotated signing keys (docs/identity.md "Signing keys"); a new
   * key starts signing two intervals after its rotation, so every process knows it first. Default 5.
   */
  AUTH_SIGNING_KEY_SYNC_SECONDS: z.coerce.number().min(0.05).max(300).default(5),
  /** Lifetime of a refresh session (the cookie), days. Default 30. */
  REFRESH_TOKEN_TTL_DAYS: z.coerce.number().int().min(1).max(365).default(30),
  /** Public base URL of the site (links in e-mails, `/site-config`); else the active manifest's `site.public_base_url`, else `http://localhost:<GATEWAY_PORT>`. */
  SITE_PUBLIC_BASE_URL: optionalUrl(),
  /** The site's name (e-mails, `/site-config`); else the active manifest's `distribution.display_name`, else `Inference Gateway`. */
  // eslint-disable-next-line no-control-regex -- the rule is "no control characters"
  SITE_NAME: optionalString().refine((v) => v === undefined || (v.length <= 120 && !/[\u0000-\u001f\u007f]/.test(v)), 'one line of at most 120 characters'),
  /** URL of the site's documentation (`/site-config`); else the active branding's `links.docs`, else none. */
  SITE_DOCS_URL: optionalUrl(),
  /** Support e-mail address (`/site-config`); else the active manifest's `site.support_email`, else none. */
  SITE_SUPPORT_EMAIL: optionalString().refine((v) => v === undefined || /^[^\s@]+@[^\s@]+$/.test(v), 'must be an e-mail address'),
  /** `false`: the refresh cookie is sent without `Secure` (plain-HTTP development only). Default true. */
  COOKIE_SECURE: flag(true),
  /** Open sign-up (`POST /auth/signup`); the runtime switch overrides it, and an active manifest's `features.public_signup: false` closes it. Default true. */
  SIGNUP_ENABLED: flag(true),
  /** New accounts must confirm their e-mail before logging in; the runtime flag overrides it. Default true. */
  SIGNUP_REQUIRE_EMAIL_VERIFICATION: flag(true),
  /** Comma-separated e-mails promoted from `free` to `admin` on login and refresh, without proof of ownership (see docs/identity.md). */
  ADMIN_EMAILS: optionalString(),
  /** Comma-separated e-mails told about each sign-up; unset falls back to `ADMIN_EMAILS`. */
  SIGNUP_NOTIFY_EMAILS: optionalString(),
  /** Failed authentications from one source within the window that block it (docs/identity.md). Default 200. */
  AUTH_FAILURE_BLOCK_THRESHOLD: z.coerce.number().int().positive().default(200),
  /** The counting window, seconds. Default 86400 (a day). */
  AUTH_FAILURE_BLOCK_WINDOW_SEC: z.coerce.number().int().positive().default(86_400),
  /** How long a blocked source is refused, seconds. Default 86400 (a day). */
  AUTH_FAILURE_BLOCK_DURATION_SEC: z.coerce.number().int().positive().default(86_400),
  /** Comma-separated addresses or CIDRs never blocked. */
  AUTH_FAILURE_BLOCK_EXEMPT_IPS: optionalString(),
  /** `false`: failed keys are not looked up to name their account in `auth_failure` lines. Default true. */
  AUTH_FAILURE_IDENTIFY_CALLER: flag(true),
  /** `true`: `POST /admin/users/{id}/hard-delete` may delete users and their request rows. Default false. */
  PERMANENT_DELETION_ENABLED: flag(false),
  /** Most inference requests one user may have in flight at once (429 above; exempt models excepted). 0 = unlimited. Default 8. */
  USER_CONCURRENCY_LIMIT: z.coerce.number().int().min(0).default(8),
  /** A user's daily spend quota in USD (resets 00:00 UTC; 429 once reached). 0 = unlimited. Default 0. */
  USER_DAILY_QUOTA_USD: z.coerce.number().min(0).default(0),
  /** How often each gateway process reloads API keys changed elsewhere, seconds. Default 2. */
  AUTH_KEY_REFRESH_SECONDS: z.coerce.number().positive().default(2),
  /** Credential of the bundled example registry, read through `${AGGREGATOR_API_KEY}` in `config/models.yaml`. A secret. */
  AGGREGATOR_API_KEY: optionalString(),

  /**
   * The path segment under which the messages surface is mirrored: `/<prefix>/v1/messages`
   * and `/<prefix>/v1/messages/count_tokens` answer like `/v1/…`. One segment of letters, digits, `_`,
   * `-` or `.` (not `v1`, `admin`, `auth` or `health`). Default `anthropic`.
   */
  MESSAGES_PREFIX: z.string().regex(/^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$/, 'one path segment: letters, digits, _ . - (no slash)')
    .refine((v) => !['v1', 'admin', 'auth', 'health', 'console'].includes(v), 'must not be a path the gateway already serves (v1, admin, auth, health, console)').default('anthropic'),
  /** Largest accepted request body on the inference surfaces, in MiB (413 above). Default 32. */
  GATEWAY_MAX_BODY_MIB: z.coerce.number().positive().max(1024).default(32),
  /** Seconds to open a TCP/TLS connection to an upstream before trying the next route. Default 10. */
  UPSTREAM_CONNECT_TIMEOUT_SECONDS: z.coerce.number().positive().default(10),
  /** Seconds an upstream may take to send response headers (its first byte). Default 300. */
  UPSTREAM_FIRST_BYTE_TIMEOUT_SECONDS: z.coerce.number().positive().default(300),
  /** Seconds an upstream may stay silent between body chunks (a stalled stream). Default 120. */
  UPSTREAM_IDLE_TIMEOUT_SECONDS: z.coerce.number().positive().default(120),
  /**
   * HTTP client for plain-HTTP (`http://`) upstreams: `native` (the gateway's lean keep-alive
   * client, ~5 µs of CPU a request less at c=64) or `undici`. TLS upstreams always use undici. Default native.
   */
  UPSTREAM_HTTP_CLIENT: z.enum(['native', 'undici']).default('native'),
  /** Estimated prompt tokens from which a request is in the `large` priority tier (upstream priority 15). Default 8192. */
  ROUTING_LARGE_PROMPT_TOKENS: z.coerce.number().int().positive().default(8192),
  /** Estimated prompt tokens from which a request is an elephant (upstream priority 0). Default 32768. */
  ROUTING_ELEPHANT_PROMPT_TOKENS: z.coerce.number().int().positive().default(32768),
  /** Deprecated: `true` makes `routewise` the router of models naming none while `default_router` is `fixed`. Default false. */
  ENABLE_ROUTEWISE: flag(false),
  /** Seconds between re-reads of today's routewise quota use from `api_logs` (picks up other gateway processes' use). Default 30. */
  ROUTEWISE_QUOTA_REFRESH_SECONDS: z.coerce.number().positive().default(30),

  // ---- request log ----
  /** `false`: no `api_logs` rows are written even with a database (docs/request-log.md). Default true. */
  REQUEST_LOG_ENABLED: flag(true),
  /** `true`: request-log rows also keep the newest user message's text (`api_logs.user_message_text`, cut to 4,000 characters), and the public stats snapshot gains its language section (docs/public-stats.md). Default false. */
  DB_STORE_FULL_CONTENT: flag(false),
  /** Rows per multi-row insert; a batch is written as soon as this many are queued. Default 500. */
  REQUEST_LOG_BATCH_SIZE: z.coerce.number().int().min(1).max(5000).default(500),
  /** Milliseconds between flushes of a partly filled batch. Default 1000. */
  REQUEST_LOG_FLUSH_INTERVAL_MS: z.coerce.number().int().min(10).max(60_000).default(1000),
  /** Rows held in memory awaiting the database; beyond it rows spill to the spool. Default 10000. */
  REQUEST_LOG_MAX_QUEUE: z.coerce.number().int().min(1).default(10_000),
  /** Milliseconds a batch insert may take before its rows go to the spool and the database counts as down. Default 5000. */
  REQUEST_LOG_WRITE_TIMEOUT_MS: z.coerce.number().int().min(50).default(5000),
  /** Directory of the overflow spool (append-only JSONL, replayed when the database answers). Default `.data/request-log-spool`. */
  REQUEST_LOG_SPOOL_DIR: z.string().min(1).default('.data/request-log-spool'),
  /** Largest size of the spool in MiB; rows beyond it are dropped and counted. Default 512. */
  REQUEST_LOG_SPOOL_MAX_MIB: z.coerce.number().positive().default(512),

  // ---- routing ----
  /** Consecutive failures (connect error, timeout, 5xx, stream failure before the first byte) that open an endpoint's circuit. Default 5. */
  CIRCUIT_FAILURE_THRESHOLD: z.coerce.number().int().min(1).default(5),
  /** Seconds an open circuit waits before admitting one test request (half-open). Default 30. */
  CIRCUIT_COOLDOWN_SECONDS: z.coerce.number().positive().default(30),
  /** A failure leaving the availability average below this opens the circuit (0 disables the rule). Default 0.5. */
  CIRCUIT_MIN_AVAILABILITY: z.coerce.number().min(0).max(1).default(0.5),
  /** Weight of the newest outcome in the availability average (EWMA; 0.05 ≈ the last 20 requests). Default 0.05. */
  CIRCUIT_AVAILABILITY_ALPHA: z.coerce.number().gt(0).max(1).default(0.05),
  /** Idle seconds before a caller's affinity pin expires (sliding). Default 300. */
  AFFINITY_TTL_SECONDS: z.coerce.number().positive().default(300),
  /** Maximum age of an affinity pin in seconds, however busy (0 disables the cap). Default 86400. */
  ROUTING_AFFINITY_MAX_AGE_SEC: z.coerce.number().min(0).default(86_400),
  /** `0`/`false` switches session affinity off (every request is a fresh weighted pick). Default true. */
  ROUTING_AFFINITY_ENABLED: flag(true),
  /** `0`/`false` switches prefill-aware selection off (no backlog tracking; plain weighted order). Default true. */
  ROUTING_PREFILL_ENABLED: flag(true),
  /** Power-of-two choice engages only when the heavier of two weighted draws has at least this many un-cached prompt tokens queued. Default 8192. */
  ROUTING_PREFILL_INTERVENE_TOKENS: z.coerce.number().int().min(0).default(8192),
  /** A pinned endpoint with more queued un-cached prompt tokens than this is skipped for one request, then re-pinned. Default 65536. */
  ROUTING_PREFILL_AFFINITY_CEILING: z.coerce.number().int().min(0).default(65_536),
  /** Elephants (prompt at or above `ROUTING_ELEPHANT_PROMPT_TOKENS`) in prefill at one endpoint before further elephants prefer another (0: no limit). Default 2. */
  ROUTING_PREFILL_MAX_ELEPHANTS_PER_ENDPOINT: z.coerce.number().int().min(0).default(2),
  /** Seconds a caller's prompt size is remembered to estimate the prefix-cached part of its next prompt. Default 300. */
  ROUTING_PREFILL_MEMORY_SECONDS: z.coerce.number().positive().default(300),
  /** `false` turns off the adaptive outbound concurrency limit per (provider label, API key). Default true. */
  UPSTREAM_CONCURRENCY_ENABLED: flag(true),
  /** Starting concurrency limit of each (provider label, API key). Default 32. */
  UPSTREAM_CONCURRENCY_INITIAL_LIMIT: z.coerce.number().int().min(1).default(32),
  /** Highest concurrency limit growth may reach. Default 256. */
  UPSTREAM_CONCURRENCY_MAX_LIMIT: z.coerce.number().int().min(1).default(256),
  /** Successes after which the limit grows by one. Default 20. */
  UPSTREAM_CONCURRENCY_PROBE_SUCCESS_INTERVAL: z.coerce.number().int().min(1).default(20),
  /** Seconds a request waits for a permit before failing over to the next route (not a breaker failure). Default 30. */
  UPSTREAM_CONCURRENCY_ACQUIRE_TIMEOUT_SEC: z.coerce.number().positive().default(30),

  // ---- database ----
  /** PostgreSQL URL. Optional for the gateway (no-database mode); required by api and workers. */
  DATABASE_URL: optionalString(),
  /** `false` runs the gateway without a database even when `DATABASE_URL` is set (`/health` then reports `database_configured: false`). Default true. */
  DB_ENABLED: flag(true),
  /** Largest number of pooled connections per process. Default 10. */
  DATABASE_POOL_MAX: z.coerce.number().int().positive().default(10),

  // ---- control-plane api process ----
  /** Interface the control-plane API listens on. Default `0.0.0.0`. */
  API_HOST: z.string().default('0.0.0.0'),
  /** Port of the control-plane API. Default 8081. */
  API_PORT: port(8081),
  /** Seconds without a write after which an owner's job event stream sends a `: keep-alive` comment (and rechecks whether the job is still active). Default 15. */
  AGENT_EVENT_STREAM_HEARTBEAT_SECONDS: z.coerce.number().positive().max(300).default(15),

  // ---- Temporal ----
  /** Temporal frontend `host:port`. Default `127.0.0.1:7233` (the dev server). */
  TEMPORAL_ADDRESS: z.string().default('127.0.0.1:7233'),
  /** Temporal namespace. Default `default`. */
  TEMPORAL_NAMESPACE: z.string().default('default'),
  /** Deadline of the API's calls to Temporal (deliver a turn, cancel, wake); past it the turn waits for the reconciler. Default 5. */
  TEMPORAL_CALL_TIMEOUT_SECONDS: z.coerce.number().positive().max(60).default(5),
  /** Task queue of the control worker (all workflows, Postgres/object-store activities). Default `control`. */
  TEMPORAL_CONTROL_TASK_QUEUE: z.string().default('control'),
  /** Base URL of the Temporal UI the operator console links each chat, sandbox and host workflow to (`<url>/namespaces/<ns>/workflows/<id>`). Default `http://127.0.0.1:8233` (the dev server's UI). */
  TEMPORAL_UI_URL: z.string().url().refine((v) => /^https?:\/\//.test(v), 'must be an http(s) URL').default('http://127.0.0.1:8233'),
  /**
   * A prebuilt workflow bundle the control worker loads instead of bundling `workflows/` at start.
   * `npm start` sets it to `dist/workflow-bundle.js`, which it rebuilds whenever the compiled
   * workflows change (ops/dev/workflow-bundle-step.ts). Unset (default): bundle at start.
   */
  TEMPORAL_WORKFLOW_BUNDLE_PATH: optionalString(),

  // ---- execution host (host runner) ----
  /** Identity of this execution host; its task queue is `host:<id>`. Default: the machine's hostname. */
  AGENT_HOST_ID: optionalString(),
  /** The host's enrollment-issued credential (docs/agent-hosts.md). A secret. */
  AGENT_HOST_CREDENTIAL: optionalString(),
  /** Base URL of the control-plane API the host runner reports to. Default `http://127.0.0.1:8081`. */
  AGENT_API_URL: z.string().url().default(DEFAULT_AGENT_API_URL),
  /** Execution slots of a host when no admin value is saved (docs/agent-hosts.md). Default 3. */
  AGENT_HOST_SLOTS: z.coerce.number().int().min(2).max(128).default(3),
  /**
   * Port of the host runner's SSH server, through which owners open a shell in their chats'
   * sandboxes (docs/ssh.md). Unset (default): no SSH server. 0: any free port (tests).
   */
  AGENT_SSH_PORT: z.preprocess((v) => (typeof v === 'string' && v.trim() === '' ? undefined : v), z.coerce.number().int().min(0).max(65535).optional()),
  /** Address the SSH server listens on. Default `127.0.0.1` (loopback: put a forward or `0.0.0.0` deliberately). */
  AGENT_SSH_BIND_ADDRESS: z.string().min(1).default('127.0.0.1'),
  /** The host name owners are told to connect to (`ssh <job_id>@<this> -p <port>`). Default: the host id. */
  AGENT_SSH_PUBLIC_HOST: optionalString(),
  /** The port owners are told (a forward in front of the server). Default: `AGENT_SSH_PORT`. */
  AGENT_SSH_PUBLIC_PORT: z.preprocess((v) => (typeof v === 'string' && v.trim() === '' ? undefined : v), z.coerce.number().int().min(1).max(65535).optional()),
  /** The SSH server's host key (Ed25519, OpenSSH form), generated at first start when missing. Default `.data/ssh/ssh_host_ed25519_key`. */
  AGENT_SSH_HOST_KEY_PATH: z.string().min(1).default('.data/ssh/ssh_host_ed25519_key'),
  /** Seconds a connection to the SSH server may take to log in before it is closed. Default 30. */
  AGENT_SSH_LOGIN_TIMEOUT_SECONDS: z.coerce.number().positive().max(600).default(30),
  /** Connections to the SSH server waiting to log in at once; a further one is closed on arrival. Default 16. */
  AGENT_SSH_MAX_UNAUTHENTICATED: z.coerce.number().int().min(1).max(1024).default(16),
  /** Seconds between host heartbeats. Default 15 (a host is stale after 90 s). */
  AGENT_HOST_HEARTBEAT_SECONDS: z.coerce.number().positive().default(15),
  /**
   * How this host runs `untrusted-vm-v1` work: `vm` (default) under the isolating runtime, attested
   * only when its preflight saw a guest kernel different from the host's; `container` explicitly
   * accepts a shared kernel for it (the trusted runtime; logged at start and shown on the host).
   * Never an automatic fallback. docs/execution-profiles.md.
   */
  AGENT_SANDBOX_BACKEND: z.enum(SANDBOX_BACKENDS).default('vm'),
  /** Docker runtime name of the isolating runtime (gVisor's `runsc`, registered in daemon.json by the bootstrap). Default `runsc`. */
  AGENT_ISOLATING_RUNTIME: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/).default('runsc'),
  /** Docker runtime name of the shared-kernel runtime of `trusted-v1` work. Default `runc`. */
  AGENT_TRUSTED_RUNTIME: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/).default('runc'),
  /** Seconds between a host runner's runtime preflights (a probe container per runtime; also at start). Default 120. */
  AGENT_PREFLIGHT_SECONDS: z.coerce.number().positive().max(86_400).default(120),
  /** Docker engine socket used by the host runner. Default `/var/run/docker.sock`. */
  DOCKER_SOCKET_PATH: z.string().default('/var/run/docker.sock'),
  /** Image sandboxes start from. Default `agent-sandbox:base` (built by the dev bootstrap). */
  AGENT_SANDBOX_IMAGE: z.string().default('agent-sandbox:base'),
  /** Memory cap of a sandbox container, in bytes (default 4g). On the control plane: the default of host setting `container_memory_mib`; on a host runner: only for work carrying no limits. */
  AGENT_SANDBOX_MEMORY_BYTES: z.coerce.number().int().min(64 * 1024 * 1024).default(4 * 1024 ** 3),
  /** CPU cap of a sandbox container (default 2). On the control plane: the default of host setting `container_cpus`; on a host runner: only for work carrying no limits. */
  AGENT_SANDBOX_CPUS: z.coerce.number().positive().max(64).default(2),
  /** The runner's execution timeout: the overall limit of one turn, in seconds; the default of host setting `turn_time_limit_seconds`. Default 1800. */
  AGENT_TURN_TIME_LIMIT_SECONDS: z.coerce.number().int().positive().default(1800),
  /** A turn's host activity is presumed lost when it misses heartbeats this long. Default 30. */
  AGENT_TURN_HEARTBEAT_TIMEOUT_SECONDS: z.coerce.number().int().min(2).default(30),
  /** Turns one chat workflow run handles before it continues as new (bounds Temporal history). Default 50. */
  AGENT_CHAT_TURNS_PER_RUN: z.coerce.number().int().min(1).max(1000).default(50),
  /**
   * Longest wait, in seconds, between a chat's own tries for a slot while its turn waits (the tries
   * start at half a second and grow). A freed slot does not wait for it: the host claims the
   * oldest waiting turn and wakes its chat (docs/agent-hosts.md "The claim queue"). Default 3.
   */
  AGENT_CHAT_ADMISSION_RETRY_SECONDS: z.coerce.number().min(1).max(300).default(3),
  /** An idle chat workflow ends after this many seconds without turns (the next turn starts it again). Default 3600. */
  AGENT_CHAT_IDLE_SECONDS: z.coerce.number().int().min(1).default(3600),
  /** A sandbox group workflow ends after this many seconds without an operator action (the next action starts it again). Default 300. */
  AGENT_SANDBOX_WORKFLOW_IDLE_SECONDS: z.coerce.number().int().min(1).default(300),
  /** Id of the Temporal Schedule the control worker keeps for the deletion sweep (every minute; docs/chat-deletion.md). One per control task queue. Default `agent-deletion-sweep`. */
  AGENT_DELETION_SWEEP_SCHEDULE_ID: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.:-]{0,199}$/, 'letters, digits and _.:-').default('agent-deletion-sweep'),
  /** Id of the Temporal Schedule the control worker keeps for the idle stop (every minute; host setting `idle_timeout_seconds`, docs/sandboxes.md "Idle stop"). One per control task queue. Default `agent-idle-sandbox-stop`. */
  AGENT_IDLE_STOP_SCHEDULE_ID: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.:-]{0,199}$/, 'letters, digits and _.:-').default('agent-idle-sandbox-stop'),
  /** Id of the Temporal Schedule the control worker keeps for the daily public stats snapshot (docs/public-stats.md). One per control task queue. Default `public-stats-snapshot`. */
  PUBLIC_STATS_SCHEDULE_ID: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.:-]{0,199}$/, 'letters, digits and _.:-').default('public-stats-snapshot'),
  /** Seconds without a heartbeat after which a host is stale (default 90). */
  AGENT_HOST_STALE_SECONDS: z.coerce.number().int().positive().default(90),
  /** Seconds between a host runner's inventory reports (its managed containers with a resource reading; default 30). */
  AGENT_INVENTORY_REFRESH_SECONDS: z.coerce.number().positive().max(3600).default(30),
  /**
   * Where a host runner keeps its sandboxes' disks: one sparse ext4 image per group container and
   * its mount point (docs/execution-profiles.md "Containment"). Persistent data (workspaces and
   * homes), so never under a directory the machine cleans (a `/tmp` swept by systemd-tmpfiles) and
   * one host runner per directory. Production: e.g. `/var/lib/agent/sandbox-disks`. Default `.data/sandbox-disks`.
   */
  AGENT_SANDBOX_DISK_DIR: z.string().min(1).default('.data/sandbox-disks'),
  /** A host runner measures its containers' disk use (the writable layer's size, a walk of the layer, plus the sandbox disk's used bytes) at most this often, seconds. Default 300. */
  AGENT_INVENTORY_DISK_SECONDS: z.coerce.number().min(0).default(300),
  /** Seconds an orphan sandbox container (labelled for a host, matching no live group) is kept after it is first reported, before the API orders its removal; covers a container whose creation is not recorded yet. Default 600. */
  AGENT_ORPHAN_GRACE_SECONDS: z.coerce.number().int().min(0).default(600),
  /** How often the host workflow checks whether a draining host (removal requested) still holds work. Default 15. */
  AGENT_HOST_DRAIN_CHECK_SECONDS: z.coerce.number().int().min(1).default(15),
  /** Base URL of the gateway that agent drivers call with their inference grant. Default `http://127.0.0.1:8080`. */
  AGENT_GATEWAY_URL: z.string().url().default('http://127.0.0.1:8080'),
  /** Token the control plane presents to the gateway to issue, renew and revoke grants (>= 32 bytes). A secret. */
  GATEWAY_GRANT_DISPATCH_TOKEN: optionalString(),
  /** Token of the on-call dispatch (at least 32 bytes). Checked at startup; no code reads it yet. A secret. */
  AGENT_ONCALL_DISPATCH_TOKEN: optionalString(),
  /** Secret that signs the control plane's own short-lived tokens (the database tool's proxy session; at least 32 bytes). A secret. */
  AGENT_CONTROL_TOKEN_SECRET: optionalString(),
  /** Key that encrypts users' source-control tokens at rest (at least 32 bytes; docs/source-control.md). A secret. */
  AGENT_SOURCE_CONTROL_ENCRYPTION_KEY: optionalString(),
  /** Key that encrypts credential fields of the admin settings at rest (at least 32 bytes; docs/agent-admin.md "Settings"). A secret. */
  AGENT_SETTINGS_ENCRYPTION_KEY: optionalString(),
  /** Host names the database tool proxy may reach besides loopback and private-network address literals (comma-separated; docs/agent-admin.md "Database tool"). */
  AGENT_DATABASE_TOOL_HOSTS: z.string().default(''),
  /** Statement timeout of a database browser query, milliseconds (docs/agent-admin.md "Database browser"). Default 5000. */
  AGENT_DATABASE_QUERY_TIMEOUT_MS: z.coerce.number().int().min(1).max(60_000).default(5000),
  /** How often every process checks the admin settings for a change, seconds (changes must apply within 5 s). Default 2. */
  AGENT_SETTINGS_SYNC_SECONDS: z.coerce.number().positive().max(5).default(2),
  /** Lifetime of a turn's inference grant between renewals, in seconds. Default 300. */
  AGENT_GRANT_TTL_SECONDS: z.coerce.number().int().min(10).default(300),
  /** Seconds between grant renewals. Default 60. */
  AGENT_GRANT_RENEW_SECONDS: z.coerce.number().int().min(1).default(60),
  /** Deadline of one prompt rewrite (`POST /v1/agent/prompts/rewrite`), grant issue and model call together, in seconds (default 90). */
  AGENT_PROMPT_REWRITE_DEADLINE_SECONDS: z.coerce.number().positive().max(600).default(90),
  /** Generate a better title for chats titled from their first prompt, with the job's model (docs/agent-api.md "Titles"). Default true. */
  AGENT_TITLE_GENERATION_ENABLED: flag(true),
  /** Execution profile of new jobs that name none (docs/execution-profiles.md). `trusted-v1` applies only to repositories of `AGENT_TRUSTED_REPOSITORIES`; every other job runs `untrusted-vm-v1`. Default `untrusted-vm-v1`. */
  AGENT_DEFAULT_EXECUTION_PROFILE: z.enum(EXECUTION_PROFILES).default('untrusted-vm-v1'),
  /** Reviewed repositories that may run `trusted-v1` (comma-separated, as the repository allowlist). Empty: none. */
  AGENT_TRUSTED_REPOSITORIES: z.string().default(''),
  /** Deployment repository allowlist (comma-separated `owner/name` or URL prefixes); empty allows no repository. */
  AGENT_REPO_ALLOWLIST: z.string().default(''),
  // source control, forges, MCP and the publisher (lib/settings-tools.ts)
  ...toolSettingsShape,
  /**
   * Agent driver of new jobs: `builtin` (tool loop against the gateway), `codex` (Codex CLI) or
   * `claude-code` (Claude Code) in the container through the model relay, or `cli` (the configured
   * JSON-lines CLI below). docs/agent-drivers.md.
   */
  AGENT_DRIVER: z.enum(AGENT_DRIVERS).default('builtin'),
  /** Command line of the coding CLI the `cli` driver runs inside the container (JSON-lines on stdout). */
  AGENT_CLI_COMMAND: z.string().default('agent-cli --json'),
  /**
   * Root of the model relay's per-container socket directories on a host (docs/agent-drivers.md
   * "Model relay"); kept short: a Unix socket path has at most 107 bytes. Default `<tmpdir>/agent-relay`.
   */
  AGENT_RELAY_DIR: z.string().min(1).optional(),
  /** Largest sandbox archive a host holds in memory between spool and upload instead of a spool file, MiB (0: always a file; docs/sandboxes.md "Archives"). */
  AGENT_ARCHIVE_MEMORY_SPOOL_MIB: z.coerce.number().int().min(0).default(256),
  /** Largest request body the model relay forwards for a native CLI, MiB. */
  AGENT_RELAY_MAX_BODY_MIB: z.coerce.number().positive().default(32),
  /** Largest workspace archive download before compression, MiB (default 1024). */
  WORKSPACE_DOWNLOAD_MAX_MIB: z.coerce.number().int().positive().default(1024),

  // ---- object storage (sandbox archives) ----
  /** `fs` (embedded default: a directory) or `s3` (any S3-compatible service). */
  OBJECT_STORE_BACKEND: z.enum(['fs', 's3']).default('fs'),
  /** Directory of the `fs` object store. Default `.data/object-store`. */
  OBJECT_STORE_FS_ROOT: z.string().default('.data/object-store'),
  /** S3-compatible endpoint URL, e.g. `http://minio:9000`. Required when the backend is `s3`. */
  S3_ENDPOINT: optionalString(),
  /** Bucket holding sandbox archives. Required when the backend is `s3`. */
  S3_BUCKET: optionalString(),
  /** S3 region. Default `us-east-1`. */
  S3_REGION: z.string().default('us-east-1'),
  /** S3 access key id. A secret. */
  S3_ACCESS_KEY_ID: optionalString(),
  /** S3 secret access key. A secret. */
  S3_SECRET_ACCESS_KEY: optionalString(),
  /**
   * Address the bucket by path (`<endpoint>/<bucket>/<key>`) instead of by host name
   * (`<bucket>.<endpoint>`). Default true: self-hosted servers (versitygw, MinIO) have no DNS name
   * per bucket; set false for AWS S3's virtual-hosted style.
   */
  S3_FORCE_PATH_STYLE: flag(true),
  /** Create `S3_BUCKET` at startup when it is missing (dev stacks). Default false: production buckets are provisioned, not guessed. */
  S3_CREATE_BUCKET: flag(false),
} as const;

/** Secrets with a minimum length of 32 bytes: a shorter one stops the process at startup, naming the variable. */
const MIN_32_BYTE_SECRETS = [
  'GATEWAY_GRANT_DISPATCH_TOKEN', 'AGENT_ONCALL_DISPATCH_TOKEN', 'AGENT_CONTROL_TOKEN_SECRET', 'AGENT_SOURCE_CONTROL_ENCRYPTION_KEY', 'AGENT_SETTINGS_ENCRYPTION_KEY',
] as const;

const settingsSchema = z.object(settingsShape).superRefine((s, ctx) => {
  if (s.REQUEST_LOG_MAX_QUEUE < s.REQUEST_LOG_BATCH_SIZE) {
    ctx.addIssue({ code: 'custom', path: ['REQUEST_LOG_MAX_QUEUE'], message: 'must be at least REQUEST_LOG_BATCH_SIZE' });
  }
  if (s.ROUTING_ELEPHANT_PROMPT_TOKENS <= s.ROUTING_LARGE_PROMPT_TOKENS) {
    ctx.addIssue({ code: 'custom', path: ['ROUTING_ELEPHANT_PROMPT_TOKENS'], message: 'must be larger than ROUTING_LARGE_PROMPT_TOKENS' });
  }
  if (s.UPSTREAM_CONCURRENCY_MAX_LIMIT < s.UPSTREAM_CONCURRENCY_INITIAL_LIMIT) {
    ctx.addIssue({ code: 'custom', path: ['UPSTREAM_CONCURRENCY_MAX_LIMIT'], message: 'must be at least UPSTREAM_CONCURRENCY_INITIAL_LIMIT' });
  }
  for (const name of MIN_32_BYTE_SECRETS) {
    const value = s[name];
    if (value !== undefined && Buffer.byteLength(value) < 32) ctx.addIssue({ code: 'custom', path: [name], message: 'must be at least 32 bytes' });
  }
  refineToolSettings(s, ctx);
  if (s.OBJECT_STORE_BACKEND === 's3') {
    for (const key of ['S3_ENDPOINT', 'S3_BUCKET'] as const) {
      if (!s[key]) ctx.addIssue({ code: 'custom', path: [key], message: `${key} is required when OBJECT_STORE_BACKEND=s3` });
    }
  }
});

export type Settings = z.infer<typeof settingsSchema>;

/** Names of every variable the schema knows (used to check deploy files name no unknown variable). */
export const settingsVariableNames: readonly string[] = Object.keys(settingsShape);

/** Variables whose values are secrets: never echoed in errors or logs. */
export const secretVariableNames: ReadonlySet<string> = new Set([
  'ADMIN_TOKEN', 'METRICS_TOKEN', 'AUTH_JWT_SECRET', 'AGGREGATOR_API_KEY', 'DATABASE_URL', 'AGENT_HOST_CREDENTIAL', 'GATEWAY_GRANT_DISPATCH_TOKEN', 'S3_ACCESS_KEY_ID', 'S3_SECRET_ACCESS_KEY',
  'AGENT_ONCALL_DISPATCH_TOKEN', 'AGENT_CONTROL_TOKEN_SECRET', 'AGENT_SOURCE_CONTROL_ENCRYPTION_KEY', 'AGENT_SETTINGS_ENCRYPTION_KEY',
  'AGENT_GITHUB_OAUTH_CLIENT_SECRET', 'AGENT_GITEA_OAUTH_CLIENT_SECRET', 'AGENT_GITEA_ADMIN_PASSWORD',
  'SLACK_ALERTS_WEBHOOK_URL', 'SLACK_WEBHOOK_URL',
]);

/** Raised when the environment does not parse; the message names each variable and the fix. */
export class SettingsError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid environment:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'SettingsError';
  }
}

/** Parses the environment once. Unknown variables are ignored; known ones must be valid. */
export function loadSettings(env: NodeJS.ProcessEnv | Record<string, string | undefined>): Settings {
  const picked: Record<string, string | undefined> = {};
  for (const name of settingsVariableNames) picked[name] = env[name];
  const parsed = settingsSchema.safeParse(picked);
  if (!parsed.success) {
    throw new SettingsError(
      parsed.error.issues.map((i) => {
        const name = i.path.join('.') || '(environment)';
        const got = secretVariableNames.has(name) ? '(secret, not shown)' : JSON.stringify(picked[name] ?? null);
        return `${name}: ${i.message} (got ${got}; fix the variable or unset it for the default)`;
      }),
    );
  }
  return Object.freeze(parsed.data);
}

/** Whether this process should use a database: configured and not switched off. */
export function databaseConfigured(settings: Settings): boolean {
  return settings.DB_ENABLED && Boolean(settings.DATABASE_URL);
}
