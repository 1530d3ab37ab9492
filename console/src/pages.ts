/**
 * The console's page table. Each area (admin console, owner workspace) exports its pages from its
 * own module, loaded on first use (a separate chunk: the first load stays small). A page states
 * who may open it; the shell hides what the account may not use, and the server checks every call
 * anyway.
 */
import type { JSX } from 'preact';

/** Who may open a page: gateway administrators, agent operators, or owners with `agent.use`. */
export type PageAccess = 'admin' | 'agent.admin' | 'agent.use';

/** What a page component receives. */
export interface PageProps {
  params: Record<string, string>;
  query: URLSearchParams;
}

/** One page: its path pattern under `/console`, its title, and its navigation label (none: not in the menu). */
export interface ConsolePage {
  path: string;
  title: string;
  nav?: string;
  access: PageAccess;
  component: (props: PageProps) => JSX.Element;
}

/** An area of the console: its path prefixes, a menu heading, and its pages (loaded lazily). */
export interface ConsoleArea {
  prefixes: readonly string[];
  heading: string;
  access: PageAccess;
  load: () => Promise<readonly ConsolePage[]>;
  /** The menu entries, known without loading the area. */
  menu: ReadonlyArray<{ path: string; label: string; access: PageAccess }>;
}
