/**
 * The chat page's SSH line (`GET /v1/agent/jobs/{job_id}/ssh`, docs/ssh.md "Owner view"): the
 * `ssh <job_id>@<host> -p <port>` command with a copy button when the sandbox can be reached now,
 * otherwise one muted line saying why (and that a key is needed when the owner has none).
 */
import type { JSX } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { Link } from '../ui/parts';
import { useResource } from '../ui/resource';

interface SshAccess {
  available: boolean;
  reason: 'no_sandbox' | 'host_ssh_off' | 'sandbox_not_running' | null;
  command: string | null;
  keys: number;
}

const REASONS: Record<NonNullable<SshAccess['reason']>, string> = {
  no_sandbox: 'the chat has no sandbox yet',
  host_ssh_off: "the sandbox's host does not run an SSH server",
  sandbox_not_running: 'the sandbox is not running (it starts again with the next turn)',
};

function CopyButton(props: { text: string }): JSX.Element {
  const [copied, setCopied] = useState<boolean | undefined>(undefined);
  const copy = async (): Promise<void> => {
    try {
      await navigator.clipboard.writeText(props.text);
      setCopied(true);
    } catch {
      setCopied(false);
    }
  };
  return (
    <>
      <button type="button" onClick={() => void copy()}>Copy</button>
      {copied === true ? <span class="ok" role="status">Copied.</span> : null}
      {copied === false ? <span class="error" role="alert">The browser refused the clipboard; select the line instead.</span> : null}
    </>
  );
}

/** One line under the chat's state; nothing while loading or when the API refuses (the page says so elsewhere). */
export function SshLine(props: { jobId: string; state: string | undefined }): JSX.Element | null {
  // Re-read when the chat's state changes: a sandbox appears or stops with the turns.
  const access = useResource<SshAccess>(`/v1/agent/jobs/${encodeURIComponent(props.jobId)}/ssh`);
  const seen = useRef(props.state);
  useEffect(() => {
    if (seen.current === props.state) return;
    seen.current = props.state;
    void access.reload();
  }, [props.state]);
  const data = access.data;
  if (!data) return null;
  const noKey = data.keys === 0 ? <> · <Link to="/settings/security">add an SSH key</Link> first</> : null;
  if (data.available && data.command) {
    return <p class="ssh-line muted">SSH: <code>{data.command}</code> <CopyButton text={data.command} />{noKey}</p>;
  }
  const why = data.reason ? REASONS[data.reason] : 'not available';
  return <p class="ssh-line muted">SSH not available: {why}{noKey}</p>;
}
