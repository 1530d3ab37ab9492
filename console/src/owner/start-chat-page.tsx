/**
 * Starting a chat (`POST /v1/agent/jobs`): prompt, model (chat models of `GET /v1/models`, demo
 * models marked), driver (the deployment default unless the owner picks one), and the workspace:
 * a repository (`owner/name`, or a repository URL) or a temporary workspace (`repo: null`).
 * Checked before sending; the server's refusal (unknown model, repository not entitled…) lands
 * next to the field it names. On success the chat page opens.
 */
import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { api } from '../client';
import { navigate } from '../router';
import { Field, fieldProps, SubmitRow, useSubmit } from '../ui/form';
import { ErrorNote, Page } from '../ui/parts';
import { useResource } from '../ui/resource';
import { PromptRewrite } from './prompt-rewrite';

/** The drivers the API lets the owner choose (docs/agent-drivers.md); none: the deployment's default. */
const DRIVERS = ['builtin', 'codex', 'claude-code', 'cli'] as const;
import { validateStart } from './start-validation';
import type { ModelItem } from './types';

/** The start-chat page. */
export function StartChatPage(): JSX.Element {
  const models = useResource<{ data: ModelItem[] }>('/v1/models');
  const chatModels = (models.data?.data ?? []).filter((m) => m.model_type !== 'embedding');
  const [prompt, setPrompt] = useState('');
  const [model, setModel] = useState('');
  const [driver, setDriver] = useState('');
  const [workspace, setWorkspace] = useState<'temporary' | 'repository'>('temporary');
  const [repo, setRepo] = useState('');
  const form = useSubmit(['prompt', 'model', 'repo', 'driver']);
  const chosen = model || (chatModels.length === 1 ? chatModels[0]!.id : '');

  const onSubmit = (event: Event): void => {
    event.preventDefault();
    void form.submit(() => validateStart({ prompt, model: chosen, workspace, repo }), async () => {
      const body = { prompt: prompt.trim(), model: chosen, repo: workspace === 'repository' ? repo.trim() : null, ...(driver ? { driver } : {}) };
      const created = await api<{ job_id: string }>('/v1/agent/jobs', { method: 'POST', body });
      navigate(`/chats/${encodeURIComponent(created.job_id)}`);
      return 'Chat started.';
    });
  };

  return (
    <Page title="Start a chat">
      <form onSubmit={onSubmit} noValidate>
        <Field label="Prompt" name="prompt" error={form.errors.prompt}>
          <textarea {...fieldProps('prompt', form.errors)} value={prompt} rows={6} onInput={(e) => setPrompt(e.currentTarget.value)} />
        </Field>
        <Field label="Model" name="model" error={form.errors.model} hint={chatModels.some((m) => m.demo) ? 'Demo models answer from a script: for trying the workspace, not for real work.' : undefined}>
          <select {...fieldProps('model', form.errors)} value={chosen} onChange={(e) => setModel(e.currentTarget.value)}>
            <option value="">Choose a model…</option>
            {chatModels.map((m) => <option key={m.id} value={m.id}>{m.id}{m.name && m.name !== m.id ? ` (${m.name})` : ''}{m.demo ? ' [demo]' : ''}</option>)}
          </select>
        </Field>
        <ErrorNote error={models.error} what="The models could not be read" />
        <PromptRewrite prompt={prompt} model={chosen} onAccept={setPrompt} />
        <Field label="Driver" name="driver" error={form.errors.driver} hint="The agent that runs the turns; the deployment's default unless you choose.">
          <select {...fieldProps('driver', form.errors)} value={driver} onChange={(e) => setDriver(e.currentTarget.value)}>
            <option value="">Default</option>
            {DRIVERS.map((d) => <option key={d} value={d}>{d}</option>)}
          </select>
        </Field>
        <fieldset class="field">
          <legend>Workspace</legend>
          <label><input type="radio" name="workspace" checked={workspace === 'temporary'} onChange={() => setWorkspace('temporary')} /> Temporary workspace (a new empty repository)</label>
          <label><input type="radio" name="workspace" checked={workspace === 'repository'} onChange={() => setWorkspace('repository')} /> A repository</label>
        </fieldset>
        {workspace === 'repository' ? (
          <Field label="Repository" name="repo" error={form.errors.repo} hint="owner/name, as your linked source-control account or the deployment's allowlist names it.">
            <input {...fieldProps('repo', form.errors)} value={repo} placeholder="owner/name" onInput={(e) => setRepo(e.currentTarget.value)} />
          </Field>
        ) : null}
        <SubmitRow label="Start chat" busy={form.busy} errors={form.errors} />
      </form>
    </Page>
  );
}
