/**
 * The owner API's shapes as the workspace reads them (docs/agent-api.md, docs/agent-events.md,
 * docs/agent-event-stream.md). Only the fields the pages show; the server may send more.
 */

/** A chat's state as the API reports it (`conversation_state`). */
export type ConversationState = 'queued' | 'running' | 'idle' | 'failed';

/** A turn's state. */
export type TurnState = 'queued' | 'running' | 'completed' | 'failed' | 'cancelled';

/** One chat in `GET /v1/agent/jobs`. */
export interface JobListItem {
  job_id: string;
  title: string;
  model: string;
  repo: string | null;
  temporary: boolean;
  conversation_state: ConversationState;
  created_at: string;
  updated_at: string;
}

/** `GET /v1/agent/jobs`. */
export interface JobList {
  jobs: JobListItem[];
  next_before: string | null;
}

/** One turn of a chat. */
export interface TurnView {
  turn_id: string;
  seq: number;
  state: TurnState;
  result: string | null;
  error?: string | null;
  created_at: string;
  started_at?: string | null;
  finished_at?: string | null;
}

/** `GET /v1/agent/jobs/{job_id}`. */
export interface JobView extends JobListItem {
  base_ref: string | null;
  pull_request: { url: string; number: number; branch: string; draft: boolean } | null;
  turns: TurnView[];
}

/** One stored event as the owner stream sends it. */
export interface AgentEvent {
  event_id: string;
  turn_seq: number;
  attempt_id: string | null;
  seq: number;
  event_type: string;
  payload: Record<string, unknown>;
  is_error: boolean;
  created_at: string;
}

/** One question a native CLI asks (inside a `question` event). */
export interface NativeQuestion {
  id: string;
  header: string;
  question: string;
  multi_select: boolean;
  options: Array<{ label: string; description?: string }>;
}

/** A question's record (`GET …/questions`, and the answer route's reply). */
export interface QuestionRecord {
  attempt_id: string;
  request_id: string;
  state: 'pending' | 'answered' | 'declined' | 'expired';
  answers: Record<string, string[]> | null;
  message: string | null;
}

/** One item of `GET /v1/models` (`demo` only on demo models). */
export interface ModelItem {
  id: string;
  name: string;
  model_type: string;
  alias_of?: string;
  demo?: boolean;
}
