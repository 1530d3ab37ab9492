/**
 * Agent settings (`/admin/agent/settings`) and host settings (`/admin/agent/host-settings`),
 * docs/agent-admin.md: one form each (./settings-form.tsx). After a save the form is rebuilt from
 * the server's new state (its revision), so what shows is what the server holds; a typed secret is
 * dropped with it.
 */
import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { ErrorNote, Freshness, Page } from '../ui/parts';
import { useResource } from '../ui/resource';
import { SettingsForm, type SettingsBody } from './settings-form';
import { SigningKeysSection } from './signing-keys';

function SettingsSection(props: { title: string; path: string; note: string }): JSX.Element {
  const settings = useResource<SettingsBody>(props.path);
  const [message, setMessage] = useState<string | undefined>(undefined);
  const body = settings.data;
  const headingId = `h-${props.path.replace(/[^a-z]/g, '-')}`;
  return (
    <section aria-labelledby={headingId}>
      <h2 id={headingId}>{props.title}</h2>
      <p class="muted">{props.note}</p>
      <Freshness loading={settings.loading} loadedAt={settings.loadedAt} error={settings.error} />
      {body ? null : <ErrorNote error={settings.error} what={`${props.title} could not be read`} />}
      {message ? <p class="ok" role="status">{message}</p> : null}
      {body?.encryption_configured === false ? <p class="warn">No AGENT_SETTINGS_ENCRYPTION_KEY on the API: secrets cannot be saved (plain settings can).</p> : null}
      {body ? (
        <SettingsForm
          key={`${body.revision ?? 'none'}`} path={props.path} body={body}
          onSaved={(m) => {
            // The line shows once the form is rebuilt from the saved state (what the server now holds).
            setMessage(undefined);
            void settings.reload().then(() => setMessage(m));
          }}
        />
      ) : null}
    </section>
  );
}

function SettingsPage(): JSX.Element {
  return (
    <Page title="Settings">
      <SettingsSection
        title="Agent settings" path="/admin/agent/settings"
        note="Saved values replace their environment defaults in every process within 5 seconds. Only the settings you change are sent."
      />
      <SettingsSection
        title="Host settings" path="/admin/agent/host-settings"
        note="Sandbox and workspace limits; each applies where it says (new containers, the next turn, the idle stop)."
      />
      <SigningKeysSection />
    </Page>
  );
}

export { SettingsPage };
