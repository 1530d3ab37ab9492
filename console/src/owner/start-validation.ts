/**
 * The start-chat form's checks, the same limits the API applies (docs/agent-api.md "Create a
 * job"), so a mistake is named before anything is sent. Pure and free of Preact (unit-tested under
 * Node); the result is the forms' `FieldErrors` shape (field name → message).
 */
/** Longest prompt the API accepts (after trimming). */
const MAX_PROMPT = 32_000;
/** `owner/name`, or an http(s) URL of a repository (the allowlist may name URL prefixes). */
const REPO = /^(?:[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+|https?:\/\/\S+)$/;

/** Validates the start-chat fields (the same limits the API applies). */
export function validateStart(values: { prompt: string; model: string; workspace: 'temporary' | 'repository'; repo: string }): Record<string, string> {
  const errors: Record<string, string> = {};
  const prompt = values.prompt.trim();
  if (!prompt) errors.prompt = 'Write what the agent should do.';
  else if (prompt.length > MAX_PROMPT) errors.prompt = `The prompt is ${prompt.length} characters; at most ${MAX_PROMPT}.`;
  if (!values.model) errors.model = 'Choose a model.';
  if (values.workspace === 'repository') {
    const repo = values.repo.trim();
    if (!repo) errors.repo = 'Name the repository (owner/name), or choose a temporary workspace.';
    else if (!REPO.test(repo)) errors.repo = 'A repository is owner/name (for example acme/widgets) or its URL.';
  }
  return errors;
}

