/**
 * The host runner's calls to the control-plane API with its own credential: an attempt's context
 * and its inference grant (the contract: lib/contracts/host-api.ts, called through the internal
 * JSON client). A 409 means the attempt is no longer current (fenced): the runner must stop
 * working on it.
 */
import type { RequestOf, ResponseOf } from '../../lib/contracts/endpoint';
import * as hostApi from '../../lib/contracts/host-api';
import * as hostSsh from '../../lib/contracts/host-ssh';
import { InternalCallError, InternalClient } from '../../lib/http/internal-client';
import type { AttemptContext } from '../../agent/jobs/attempt-context';

/**
 * Per-call timeout of the host API: longer than the API's own grant dispatch call to the gateway
 * (10 s), so a gateway that does not answer reaches the host as the API's 504, not as a timeout.
 */
export const HOST_API_TIMEOUT_MS = 15_000;

export class AttemptNotCurrentError extends Error {
  constructor(attemptId: string) {
    super(`Attempt ${attemptId} is not current`);
    this.name = 'AttemptNotCurrent';
  }
}

/**
 * A call the control-plane API refused or that got no answer: `status` (undefined when no answer
 * came) and the API's `code` (`model_not_found`, `service_unavailable`, …). The message (for the
 * host runner's log) holds the call and the API's answer; owners are never shown it (turn-runner.ts
 * words their message from `status` and `code`).
 */
export class HostApiError extends InternalCallError {}

export interface HostApiOptions {
  apiUrl: string;
  hostId: string;
  credential: string;
  /** Per-call timeout; {@link HOST_API_TIMEOUT_MS} by default. */
  timeoutMs?: number;
  /** Replaceable for tests; the global fetch by default. */
  fetch?: typeof fetch;
}

export type TurnGrant = ResponseOf<typeof hostApi.attemptGrant>;
export type ToolCredentials = ResponseOf<typeof hostApi.attemptToolCredentials>;
export type QuestionState = ResponseOf<typeof hostApi.attemptQuestion>;
export type PatchReceipt = ResponseOf<typeof hostApi.attemptPatch>;
export type SshSessionAnswer = ResponseOf<typeof hostSsh.sshSessionOpen>;

export class HostApiClient {
  private readonly http: InternalClient;

  constructor(private readonly options: HostApiOptions) {
    this.http = new InternalClient({
      service: 'control-plane API', baseUrl: options.apiUrl, token: options.credential,
      timeoutMs: options.timeoutMs ?? HOST_API_TIMEOUT_MS, fetch: options.fetch, errorClass: HostApiError,
    });
  }

  /** `call`'s answer; a 409 becomes {@link AttemptNotCurrentError}. */
  private async fenced<T>(attemptId: string, call: Promise<T>): Promise<T> {
    try {
      return await call;
    } catch (err) {
      if (err instanceof HostApiError && err.status === 409) throw new AttemptNotCurrentError(attemptId);
      throw err;
    }
  }

  attemptContext(attemptId: string): Promise<AttemptContext> {
    return this.fenced(attemptId, this.http.call(hostApi.attemptContext, { params: { hostId: this.options.hostId, attemptId } }));
  }

  turnGrant(attemptId: string): Promise<TurnGrant> {
    return this.fenced(attemptId, this.http.call(hostApi.attemptGrant, { params: { hostId: this.options.hostId, attemptId }, body: {} }));
  }

  /**
   * The read-only clone credential of the attempt's repository (undefined: none is needed or
   * served). For the runner's git only, through the environment of each fetch; never logged or stored.
   */
  async cloneCredential(attemptId: string): Promise<string | undefined> {
    const answer = await this.fenced(attemptId, this.http.call(hostApi.attemptCloneCredential, { params: { hostId: this.options.hostId, attemptId }, body: {} }));
    return answer.token ?? undefined;
  }

  /** The attempt's tool-relay credentials (docs/mcp.md); fetching again rotates them. */
  toolCredentials(attemptId: string): Promise<ToolCredentials> {
    return this.fenced(attemptId, this.http.call(hostApi.attemptToolCredentials, { params: { hostId: this.options.hostId, attemptId }, body: {} }));
  }

  /** Where the owner's answer to the attempt's question stands. */
  questionState(attemptId: string, requestId: string): Promise<QuestionState> {
    return this.fenced(attemptId, this.http.call(hostApi.attemptQuestion, { params: { hostId: this.options.hostId, attemptId, requestId } }));
  }

  /** Stops waiting: a pending question becomes `expired`; the final state (an answer that came first wins). */
  expireQuestion(attemptId: string, requestId: string): Promise<QuestionState> {
    return this.fenced(attemptId, this.http.call(hostApi.attemptQuestionExpire, { params: { hostId: this.options.hostId, attemptId, requestId }, body: {} }));
  }

  /** Uploads what the turn's capture found (docs/publisher.md "Upload"); repeated, it changes nothing. */
  uploadPatch(attemptId: string, body: RequestOf<typeof hostApi.attemptPatch>): Promise<PatchReceipt> {
    return this.fenced(attemptId, this.http.call(hostApi.attemptPatch, { params: { hostId: this.options.hostId, attemptId }, body }));
  }

  /** Asks whether `publicKey` (SSH wire form, base64) may open a session into chat `jobId` on this host; the API audits the answer (docs/ssh.md). */
  sshSessionOpen(body: RequestOf<typeof hostSsh.sshSessionOpen>): Promise<SshSessionAnswer> {
    return this.http.call(hostSsh.sshSessionOpen, { params: { hostId: this.options.hostId }, body });
  }

  /** Reports the end of an SSH session; the API records its duration once. */
  sshSessionClose(sessionId: string, body: RequestOf<typeof hostSsh.sshSessionClose>): Promise<ResponseOf<typeof hostSsh.sshSessionClose>> {
    return this.http.call(hostSsh.sshSessionClose, { params: { hostId: this.options.hostId, sessionId }, body });
  }
}
