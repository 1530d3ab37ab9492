/**
 * The class of a request's `User-Agent` for the automation score's `client_tool_prior`
 * (docs/automation-score.md, "User-agent classes"), and the class's prior: how likely a request
 * from such a client is script-driven. The rules read the leading product token the same way the
 * request log does (`leadingToken`, gateway/request-log/client-agent.ts).
 */
import { declaredAgent, leadingToken } from '../../request-log/client-agent';

export type UserAgentClass = 'agent_or_browser' | 'sdk' | 'http_library' | 'unknown_product' | 'unrecognized';

/** Prior of each class (1 = scripted). */
export const CLASS_PRIOR: Readonly<Record<UserAgentClass, number>> = {
  agent_or_browser: 0.1,
  sdk: 0.5,
  http_library: 0.85,
  unknown_product: 0.6,
  unrecognized: 0.7,
};

/** Leading tokens of browsers (every mainstream browser sends `Mozilla/5.0 …`; Opera's old form too). */
const BROWSERS: ReadonlySet<string> = new Set(['mozilla', 'opera']);

/**
 * Leading tokens of model-provider and framework SDKs: used by apps people drive and by batch
 * scripts alike, hence "ambiguous".
 */
const SDKS: ReadonlySet<string> = new Set([
  'openai', 'asyncopenai', 'anthropic', 'asyncanthropic', 'litellm', 'langchain', 'langchain-js', 'llamaindex', 'llama-index',
  'ai-sdk', 'ai', 'google-genai-sdk', 'google-api-nodejs-client', 'google-api-python-client', 'mistralai', 'cohere', 'groq-sdk',
  'together', 'ollama', 'openrouter', 'instructor', 'dspy', 'semantic-kernel', 'haystack', 'vercel-ai',
]);

/** Leading tokens of raw HTTP libraries and API tools. */
const HTTP_LIBRARIES: ReadonlySet<string> = new Set([
  'curl', 'wget', 'libcurl', 'python-requests', 'python-urllib', 'python-httpx', 'python', 'aiohttp', 'httpx', 'urllib3',
  'go-http-client', 'okhttp', 'axios', 'node-fetch', 'undici', 'node', 'got', 'superagent', 'java', 'apache-httpclient',
  'jakarta', 'ruby', 'faraday', 'php', 'guzzlehttp', 'restsharp', 'reqwest', 'dart', 'postmanruntime', 'insomnia', 'httpie',
  'powershell', 'windowspowershell', 'hurl', 'k6', 'wrk', 'hey', 'ab', 'bun', 'deno', 'rest-client', 'http.rb', 'lwp-useragent',
]);

/** A leading product token in the `name/version` form of HTTP's `User-Agent` grammar. */
const PRODUCT_FORM = /^\s*[A-Za-z][A-Za-z0-9._+-]*\/[^\s/]+/;

/** The class of one `User-Agent` value (`undefined` or `''`: none sent). */
export function userAgentClass(userAgent: string | undefined): UserAgentClass {
  if (declaredAgent(userAgent) !== undefined) return 'agent_or_browser';
  const token = leadingToken(userAgent);
  if (token === undefined) return 'unrecognized';
  if (BROWSERS.has(token)) return 'agent_or_browser';
  if (SDKS.has(token)) return 'sdk';
  if (HTTP_LIBRARIES.has(token)) return 'http_library';
  return PRODUCT_FORM.test(userAgent!) ? 'unknown_product' : 'unrecognized';
}

/** Requests per class, from requests per distinct `User-Agent` (`''` = none). */
export function classCounts(userAgents: Readonly<Record<string, number>>): Record<UserAgentClass, number> {
  const counts: Record<UserAgentClass, number> = { agent_or_browser: 0, sdk: 0, http_library: 0, unknown_product: 0, unrecognized: 0 };
  for (const [ua, n] of Object.entries(userAgents)) counts[userAgentClass(ua === '' ? undefined : ua)] += n;
  return counts;
}
