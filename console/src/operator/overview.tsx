/** The agent operations overview: what each operator page is for, with links. */
import type { JSX } from 'preact';
import { Link, Page } from '../ui/parts';

function OverviewPage(): JSX.Element {
  return (
    <Page title="Agent operations">
      <p>Hosts, sandboxes, runs, the audit log and settings of the agent control plane. Every chat, sandbox and host links to its workflow in the Temporal UI.</p>
      <ul>
        <li><Link to="/admin/agent/hosts">Hosts</Link>: slots in use, display states, slot changes and removal.</li>
        <li><Link to="/admin/agent/sandboxes">Sandboxes</Link>: the inventory and every lifecycle action, one by one or in a batch.</li>
        <li><Link to="/admin/agent/runs">Run activity</Link>: a chat's events; opening an event's content is audited.</li>
        <li><Link to="/admin/agent/audit">Audit log</Link>: every operator change and content read.</li>
        <li><Link to="/admin/agent/settings">Settings</Link>: agent and host settings (secrets show only as configured or not).</li>
      </ul>
    </Page>
  );
}

export { OverviewPage };
