/** The admin console's menu (the pages are in ./index.tsx, loaded when first opened). */
import type { ConsoleArea } from '../pages';

export const adminArea: ConsoleArea = {
  prefixes: ['/admin'],
  heading: 'Admin',
  access: 'admin',
  load: async () => (await import('./index')).adminPages,
  menu: [
    { path: '/admin', label: 'Overview', access: 'admin' },
  ],
};
