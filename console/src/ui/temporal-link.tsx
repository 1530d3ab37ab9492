/**
 * A link to a workflow in the Temporal UI. The UI's address and namespace come from
 * `GET /admin/agent/console-info` (operators only), read once per page load and shared by every
 * link; until it answers (or when it fails) the link is plain text naming the workflow id, so a
 * page never links to a guessed address.
 */
import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api } from '../client';
import { temporalWorkflowUrl, type ConsoleInfo } from './temporal';

let pending: Promise<ConsoleInfo | undefined> | undefined;

/** The console information, fetched once (a failure is retried on the next page that asks). */
export function useConsoleInfo(): ConsoleInfo | undefined {
  const [info, setInfo] = useState<ConsoleInfo | undefined>(undefined);
  useEffect(() => {
    pending ??= api<ConsoleInfo>('/admin/agent/console-info').catch(() => {
      pending = undefined;
      return undefined;
    });
    let live = true;
    void pending.then((value) => {
      if (live) setInfo(value);
    });
    return () => {
      live = false;
    };
  }, []);
  return info;
}

/** "Temporal" linking to `workflowId`'s page in the Temporal UI (opens in a new tab). */
export function TemporalLink(props: { workflowId: string; label?: string }): JSX.Element {
  const info = useConsoleInfo();
  const label = props.label ?? 'Temporal';
  if (!info) return <span class="muted" title={`Workflow ${props.workflowId}`}>{label}</span>;
  return (
    <a
      href={temporalWorkflowUrl(info, props.workflowId)} target="_blank" rel="noopener noreferrer"
      title={`Workflow ${props.workflowId} in the Temporal UI`} aria-label={`${label}: workflow ${props.workflowId} in the Temporal UI (new tab)`}
    >
      {label}
    </a>
  );
}
