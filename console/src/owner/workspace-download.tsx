/**
 * "Download workspace" (`GET /v1/agent/jobs/{job_id}/workspace/archive`): the gzipped tar of the
 * chat's `/workspace`. The call needs the session's Authorization header, so the console fetches
 * the archive itself and hands it to the browser as a download (a plain link could not
 * authenticate). A refusal is shown as the API words it: 413 when the workspace is larger than
 * the deployment allows, 409 while the chat has no sandbox yet.
 */
import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { api, ApiError, useSession } from '../client';

function fileName(res: Response, jobId: string): string {
  const match = /filename="([^"]+)"/.exec(res.headers.get('content-disposition') ?? '');
  return match?.[1] ?? `${jobId}-workspace.tar.gz`;
}

/** The download button with its outcome. */
export function WorkspaceDownload(props: { jobId: string }): JSX.Element {
  const { unreachableSince } = useSession();
  const [busy, setBusy] = useState(false);
  const [outcome, setOutcome] = useState<{ ok: boolean; text: string } | undefined>(undefined);
  const download = async (): Promise<void> => {
    setBusy(true);
    setOutcome(undefined);
    try {
      const res = await api<Response>(`/v1/agent/jobs/${encodeURIComponent(props.jobId)}/workspace/archive`, { raw: true });
      const blob = await res.blob();
      const url = URL.createObjectURL(blob);
      const anchor = document.createElement('a');
      anchor.href = url;
      anchor.download = fileName(res, props.jobId);
      document.body.appendChild(anchor);
      anchor.click();
      anchor.remove();
      setTimeout(() => URL.revokeObjectURL(url), 60_000);
      setOutcome({ ok: true, text: `Downloaded ${(blob.size / 1024).toFixed(1)} KiB.` });
    } catch (err) {
      const e = err instanceof ApiError ? err : new ApiError(0, (err as Error).message);
      const why = e.status === 413 ? 'The workspace is too large to download: ' : '';
      setOutcome({ ok: false, text: `${why}${e.message}${e.status ? ` (${e.status})` : ''}` });
    } finally {
      setBusy(false);
    }
  };
  return (
    <span class="action">
      <button type="button" disabled={busy || unreachableSince !== undefined} onClick={() => void download()}>{busy ? 'Preparing the archive…' : 'Download workspace'}</button>
      {outcome ? <span class={outcome.ok ? 'ok' : 'error'} role={outcome.ok ? 'status' : 'alert'}>{outcome.text}</span> : null}
    </span>
  );
}
