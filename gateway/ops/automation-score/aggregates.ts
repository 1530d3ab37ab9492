/**
 * What the automation score reads about one user over its window (docs/automation-score.md): the
 * per-user aggregates the SQL in `aggregates-sql.ts` computes from `api_logs` rows with a user id.
 * Percentiles are `[p25, p50, p75]` (linear interpolation, `percentile_cont`), null when the
 * column has no qualifying row.
 */

/** Three quartiles `[p25, p50, p75]`. */
export type Quartiles = readonly [number, number, number];

export interface UserAggregates {
  userId: number;
  /** Requests in the window (N). */
  n: number;
  /** Rows with a non-null `num_user_turns` (chat-shaped requests). */
  nChat: number;
  /** Chat rows with at most one user message. */
  oneShot: number;
  /** p90 of `num_user_turns`; null without chat rows. */
  turnsP90: number | null;
  /** Chat rows whose request carried at least one assistant tool call. */
  withToolCalls: number;
  /** Sum of `num_tool_calls` (reported, not scored). */
  toolCalls: number;
  /** Rows with `prompt_tokens > 0` (n_sz) and their quartiles. */
  nSized: number;
  promptTokens: Quartiles | null;
  /** Rows whose `metadata.agent` is present (a declared coding agent). */
  withAgent: number;
  /** Requests per distinct `metadata.user_agent` (`''` for rows without one). */
  userAgents: Readonly<Record<string, number>>;
  /** Requests per UTC hour of day, 24 buckets. */
  hours: readonly number[];
  /** Inter-arrival gaps in seconds between consecutive requests (N - 1 of them) and their quartiles. */
  nGaps: number;
  gaps: Quartiles | null;
  /** Rows with a non-null `user_message_chars` and the quartiles of those lengths. */
  nMessageSized: number;
  messageChars: Quartiles | null;
  /** Rows with a non-blank newest user message (chars > 0) and their mean entropy, bits per char. */
  nMessageEntropy: number;
  meanEntropy: number | null;
  /** Rows with a message hash, and how many distinct hashes among them. */
  nHashed: number;
  distinctHashes: number;
}

/** The aggregates of a user without a row in the window. */
export function emptyAggregates(userId: number): UserAggregates {
  return {
    userId, n: 0, nChat: 0, oneShot: 0, turnsP90: null, withToolCalls: 0, toolCalls: 0, nSized: 0, promptTokens: null,
    withAgent: 0, userAgents: {}, hours: new Array<number>(24).fill(0), nGaps: 0, gaps: null, nMessageSized: 0, messageChars: null,
    nMessageEntropy: 0, meanEntropy: null, nHashed: 0, distinctHashes: 0,
  };
}
