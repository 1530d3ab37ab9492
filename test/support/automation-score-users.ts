/**
 * The reference users of the automation-score tests, as `api_logs` rows (docs/automation-score.md).
 * Times are whole hours or half hours from `day0` (a UTC midnight), so hours, gaps and their
 * quartiles can be worked out by hand; the expected scores are derived in the test file.
 */
import { randomUUID } from 'node:crypto';

export const BOT = 101;
export const HUMAN = 102;
export const CODING_AGENT = 103;
export const MIXED = 104;
export const FEW = 105;
/** An account without a row. */
export const IDLE = 106;

const HOUR = 3_600_000;
const BROWSER = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36';

interface Request {
  userId: number | null;
  at: Date;
  turns: number;
  toolCalls?: number;
  promptTokens: number;
  userAgent: string;
  agent?: string;
  chars: number;
  entropy: number;
  hash: string;
}

/** 16 hex digits naming `label` (distinct labels, distinct hashes). */
function hashOf(label: string): string {
  return Buffer.from(label).toString('hex').padEnd(16, '0').slice(-16);
}

export function apiLogRow(r: Request): Record<string, unknown> {
  return {
    log_id: randomUUID(), request_id: randomUUID(), created_at: r.at, user_id: r.userId, model: 'm', surface: 'chat', status: 200,
    num_user_turns: r.turns, num_tool_calls: r.toolCalls ?? 0, prompt_tokens: r.promptTokens, completion_tokens: 10,
    user_message_chars: r.chars, user_message_entropy: r.entropy, user_message_hash: r.hash,
    metadata: JSON.stringify({ user_agent: r.userAgent, ...(r.agent ? { agent: r.agent } : {}) }),
  };
}

/** Scripted bot: every 15 minutes for 24 hours (96 rows), one-shot, identical prompts, a raw HTTP library. */
function bot(day0: number): Request[] {
  return Array.from({ length: 96 }, (_, i) => ({
    userId: BOT, at: new Date(day0 + i * HOUR / 4), turns: 1, promptTokens: 500, userAgent: 'python-requests/2.31.0',
    chars: 120, entropy: 3.25, hash: hashOf('same prompt'),
  }));
}

/** Human: 10 consecutive days at 09, 10, 11, 13, 15, 16 h; two 3-turn chats a day from a browser; every message new. */
function human(day0: number): Request[] {
  const out: Request[] = [];
  for (let d = 0; d < 10; d += 1) {
    [9, 10, 11, 13, 15, 16].forEach((h, j) => {
      const turn = (j % 3) + 1;
      out.push({
        userId: HUMAN, at: new Date(day0 + (d * 24 + h) * HOUR), turns: turn, promptTokens: [200, 800, 2000][turn - 1]!,
        userAgent: BROWSER, chars: [40, 150, 600][turn - 1]!, entropy: 4.25, hash: hashOf(`h${d}-${j}`),
      });
    });
  }
  return out;
}

/** Coding-agent user: 4 days, one 10-turn session a day at 10..19 h from a declared agent; tool calls from turn 2. */
function codingAgent(day0: number): Request[] {
  const out: Request[] = [];
  for (let d = 0; d < 4; d += 1) {
    for (let k = 1; k <= 10; k += 1) {
      out.push({
        userId: CODING_AGENT, at: new Date(day0 + (d * 24 + 9 + k) * HOUR), turns: k, toolCalls: k >= 2 ? 2 : 0, promptTokens: 1000 * k,
        userAgent: 'claude-cli/1.0.30 (external, cli)', agent: 'claude-cli', chars: 100 * (d + 1), entropy: 4.5, hash: hashOf(`task${d}`),
      });
    }
  }
  return out;
}

/** Mixed: 2 days; a script every 30 minutes from 00:00 to 04:30, and two 5-turn browser chats hourly 09..18 h. */
function mixed(day0: number): Request[] {
  const out: Request[] = [];
  for (let d = 0; d < 2; d += 1) {
    for (let i = 0; i < 10; i += 1) {
      out.push({
        userId: MIXED, at: new Date(day0 + d * 24 * HOUR + i * HOUR / 2), turns: 1, promptTokens: 700, userAgent: 'python-requests/2.31.0',
        chars: 80, entropy: 3, hash: hashOf('nightly job'),
      });
    }
    for (let j = 0; j < 10; j += 1) {
      const turn = (j % 5) + 1;
      out.push({
        userId: MIXED, at: new Date(day0 + (d * 24 + 9 + j) * HOUR), turns: turn, promptTokens: 300 * turn, userAgent: BROWSER,
        chars: 50 * turn, entropy: 4, hash: hashOf(`m${d}-${j}`),
      });
    }
  }
  return out;
}

/** Too few rows: three one-shot curl requests. */
function few(day0: number): Request[] {
  return [1, 2, 3].map((h) => ({ userId: FEW, at: new Date(day0 + h * HOUR), turns: 1, promptTokens: 50, userAgent: 'curl/8.5.0', chars: 10, entropy: 2, hash: hashOf(`f${h}`) }));
}

/**
 * Every reference row: the five users from `day0`, rows without a user (ignored), and five rows
 * of the human 45 days before `day0` (outside a 30-day window, inside 90 days).
 */
export function referenceRows(day0: number): Array<Record<string, unknown>> {
  const old = Array.from({ length: 5 }, (_, i) => ({ userId: HUMAN, at: new Date(day0 - (45 * 24 - i) * HOUR), turns: 1, promptTokens: 10, userAgent: 'curl/8.5.0', chars: 5, entropy: 1, hash: hashOf(`old${i}`) }));
  const anonymous = [1, 2].map((i) => ({ userId: null, at: new Date(day0 + i * HOUR), turns: 1, promptTokens: 10, userAgent: 'curl/8.5.0', chars: 5, entropy: 1, hash: hashOf(`anon${i}`) }));
  return [...bot(day0), ...human(day0), ...codingAgent(day0), ...mixed(day0), ...few(day0), ...old, ...anonymous].map(apiLogRow);
}
