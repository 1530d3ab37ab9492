/**
 * Every migration, oldest first. Add a file named `<UTC timestamp>_<what>.ts` and list it here.
 * A `down` that would lose data refuses (throws) while that data exists.
 */
import type { Knex } from 'knex';
import * as initial from './20261121000000_initial';

export interface Migration {
  name: string;
  up: (knex: Knex) => Promise<void>;
  down: (knex: Knex) => Promise<void>;
}

export const migrations: readonly Migration[] = [
  { name: '20261121000000_initial', ...initial },
];
