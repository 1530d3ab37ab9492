/** The agent operator pages' menu (the pages are in ./index.tsx, loaded when first opened; keep both in sync). */
import type { ConsoleArea } from '../pages';

export const operatorArea: ConsoleArea = {
  prefixes: ['/admin/agent'],
  heading: 'Agent operations',
  access: 'agent.admin',
  load: async () => (await import('./index')).operatorPages,
  menu: [
    { path: '/admin/agent', label: 'Overview', access: 'agent.admin' },
    { path: '/admin/agent/hosts', label: 'Hosts', access: 'agent.admin' },
    { path: '/admin/agent/sandboxes', label: 'Sandboxes', access: 'agent.admin' },
    { path: '/admin/agent/runs', label: 'Run activity', access: 'agent.admin' },
    { path: '/admin/agent/audit', label: 'Audit log', access: 'agent.admin' },
    { path: '/admin/agent/settings', label: 'Settings', access: 'agent.admin' },
  ],
};
