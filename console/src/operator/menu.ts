/** The agent operator pages' menu (the pages are in ./index.tsx, loaded when first opened). */
import type { ConsoleArea } from '../pages';

export const operatorArea: ConsoleArea = {
  prefixes: ['/admin/agent'],
  heading: 'Agent operations',
  access: 'agent.admin',
  load: async () => (await import('./index')).operatorPages,
  menu: [
    { path: '/admin/agent', label: 'Overview', access: 'agent.admin' },
  ],
};
