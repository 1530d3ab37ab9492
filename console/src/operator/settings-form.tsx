/**
 * One settings form over `GET`/`PUT {settings: {…}}` (agent settings and host settings share the
 * shape, docs/agent-admin.md "Settings"). Each key shows its effective value, its default and
 * whether it is saved; the PUT is partial and carries only the keys the operator changed. "Use the
 * default" sends `null`. A credential is never read back: it shows "configured" / "not configured",
 * its input starts empty, and an empty input keeps the saved value (the key is not sent); "Clear"
 * sends `null`. The server's 400 naming `settings.<key>` lands on that key's field.
 */
import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { api } from '../client';
import { Field, fieldProps, SubmitRow, useSubmit, type FieldErrors } from '../ui/form';
import { Badge, When } from '../ui/parts';

/** A plain setting as GET answers it. */
export interface PlainSetting { value: unknown; default: unknown; saved: boolean; updated_at: string | null; applies_to?: string }
/** A credential setting: only whether it is configured. */
export interface CredentialSetting { credential: true; configured: boolean; saved: boolean; updated_at: string | null }
export type SettingView = PlainSetting | CredentialSetting;

/** GET's body. */
export interface SettingsBody { revision: string | null; encryption_configured?: boolean; settings: Record<string, SettingView> }

function isCredential(view: SettingView): view is CredentialSetting {
  return (view as CredentialSetting).credential === true;
}

/** How a key is edited; `open` (no value and no default to learn the type from) sends a number when the text is one. */
type Kind = 'boolean' | 'number' | 'list' | 'text' | 'open';

function kindOf(view: PlainSetting): Kind {
  const sample = view.value ?? view.default;
  if (typeof sample === 'boolean') return 'boolean';
  if (typeof sample === 'number') return 'number';
  if (Array.isArray(sample)) return 'list';
  return sample === null || sample === undefined ? 'open' : 'text';
}

/** The text an input shows for a plain value (lists one entry per line). */
export function textOf(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (Array.isArray(value)) return value.map((v) => (typeof v === 'string' ? v : JSON.stringify(v))).join('\n');
  if (typeof value === 'string') return value;
  return typeof value === 'number' || typeof value === 'boolean' ? String(value) : JSON.stringify(value);
}

/** The value to send for `text` of a key of `kind`, or the error to show before sending. */
export function valueOf(kind: Kind, text: string): { value: unknown } | { error: string } {
  const trimmed = text.trim();
  if (kind === 'boolean') return { value: trimmed === 'true' };
  if (kind === 'number') {
    const n = Number(trimmed);
    return trimmed !== '' && Number.isFinite(n) ? { value: n } : { error: 'Enter a number.' };
  }
  if (kind === 'list') return { value: trimmed === '' ? [] : trimmed.split('\n').map((l) => l.trim()).filter(Boolean) };
  if (kind === 'open' && trimmed !== '' && Number.isFinite(Number(trimmed))) return { value: Number(trimmed) };
  return { value: trimmed === '' ? null : trimmed };
}

function describe(value: unknown): string {
  if (value === null || value === undefined) return 'none';
  if (Array.isArray(value)) return value.length ? textOf(value).split('\n').join(', ') : 'empty list';
  return textOf(value);
}

/** The form of one settings resource; `onSaved` receives the message to show (the page reloads it). */
export function SettingsForm(props: { path: string; body: SettingsBody; onSaved: (message: string) => void }): JSX.Element {
  const keys = Object.keys(props.body.settings);
  const names = keys.map((k) => `settings.${k}`);
  const initial = (): Record<string, string> => Object.fromEntries(keys.map((k) => {
    const view = props.body.settings[k]!;
    return [k, isCredential(view) ? '' : textOf(view.value)];
  }));
  const [drafts, setDrafts] = useState<Record<string, string>>(initial);
  const [useDefault, setUseDefault] = useState<Record<string, boolean>>({});
  const form = useSubmit([...names, 'settings']);
  const set = (key: string, text: string): void => setDrafts({ ...drafts, [key]: text });

  const patch = (): { settings: Record<string, unknown>; errors: FieldErrors } => {
    const settings: Record<string, unknown> = {};
    const errors: FieldErrors = {};
    for (const key of keys) {
      const view = props.body.settings[key]!;
      const text = drafts[key] ?? '';
      if (useDefault[key]) {
        if (isCredential(view) ? view.configured : view.saved) settings[key] = null;
        continue;
      }
      if (isCredential(view)) {
        if (text !== '') settings[key] = text;
        continue;
      }
      if (text === textOf(view.value)) continue;
      const parsed = valueOf(kindOf(view), text);
      if ('error' in parsed) errors[`settings.${key}`] = parsed.error;
      else settings[key] = parsed.value;
    }
    return { settings, errors };
  };

  const onSubmit = (event: Event): void => {
    event.preventDefault();
    const { settings, errors } = patch();
    void form.submit(
      () => (Object.keys(errors).length ? errors : Object.keys(settings).length ? {} : { '': 'Nothing changed.' }),
      async () => {
        const answer = await api<{ changed: string[] }>(props.path, { method: 'PUT', body: { settings } });
        const message = answer.changed.length ? `Saved: ${answer.changed.join(', ')}.` : 'Nothing changed.';
        props.onSaved(message);
        return message;
      },
    );
  };

  return (
    <form onSubmit={onSubmit} noValidate>
      {keys.map((key) => {
        const view = props.body.settings[key]!;
        const name = `settings.${key}`;
        const saved = view.saved ? <>saved <When at={view.updated_at} /></> : 'not saved';
        if (isCredential(view)) {
          return (
            <Field key={key} label={key} name={name} error={form.errors[name]} hint="A secret: never shown. Leave empty to keep the saved value; type a new one to replace it.">
              <span>{view.configured ? <Badge tone="ok">configured</Badge> : <Badge tone="muted">not configured</Badge>} <small class="muted">{saved}</small></span>
              <input {...fieldProps(name, form.errors)} type="password" autoComplete="new-password" value={drafts[key] ?? ''} disabled={useDefault[key]} onInput={(e) => set(key, (e.currentTarget).value)} />
              <label><input type="checkbox" checked={useDefault[key] ?? false} onChange={(e) => setUseDefault({ ...useDefault, [key]: (e.currentTarget).checked })} /> Clear (not configured)</label>
            </Field>
          );
        }
        const kind = kindOf(view);
        const hint = `Default: ${describe(view.default)} · ${view.saved ? 'saved' : 'not saved (the default applies)'}${view.applies_to ? ` · applies to ${view.applies_to}` : ''}${kind === 'list' ? ' · one entry per line' : ''}`;
        const input = {
          ...fieldProps(name, form.errors), value: drafts[key] ?? '', disabled: useDefault[key],
          onInput: (e: Event) => set(key, (e.currentTarget as HTMLInputElement).value),
        };
        return (
          <Field key={key} label={key} name={name} error={form.errors[name]} hint={hint}>
            {kind === 'boolean' ? (
              <select {...input} onChange={input.onInput}><option value="true">true</option><option value="false">false</option></select>
            ) : kind === 'list' ? <textarea {...input} /> : <input {...input} inputMode={kind === 'number' ? 'decimal' : undefined} />}
            {view.saved ? <label><input type="checkbox" checked={useDefault[key] ?? false} onChange={(e) => setUseDefault({ ...useDefault, [key]: (e.currentTarget).checked })} /> Use the default</label> : null}
          </Field>
        );
      })}
      {/* The success line is the page's (the form is rebuilt from the saved state after a save). */}
      <SubmitRow label="Save changes" busy={form.busy} errors={form.errors} />
    </form>
  );
}
