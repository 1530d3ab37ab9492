/**
 * Identity: accounts, API keys, refresh sessions, login events, e-mail verification and the
 * outbound mail outbox (no mail server is configured; messages wait in the outbox and are logged).
 */
import type { Knex } from 'knex';
import { dropTablesRefusingRows } from './support';

export const TABLES = ['email_outbox', 'email_verifications', 'login_events', 'refresh_sessions', 'api_keys', 'users'] as const;

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('users', (t) => {
    t.bigIncrements('id').primary();
    t.text('email').notNullable();
    t.text('password_hash').nullable();
    t.text('role').notNullable().defaultTo('free');
    t.specificType('permissions', 'text[]').notNullable().defaultTo('{}');
    t.timestamp('email_verified_at', { useTz: true }).nullable();
    t.timestamp('suspended_at', { useTz: true }).nullable();
    t.timestamp('deleted_at', { useTz: true }).nullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw(`alter table users add constraint users_role_check check (role in ('free', 'pro', 'internal', 'admin'))`);
  await knex.raw('create unique index users_email_lower_unique on users (lower(email))');

  await knex.schema.createTable('api_keys', (t) => {
    t.bigIncrements('id').primary();
    t.bigInteger('user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.text('name').notNullable();
    t.text('key_hash').notNullable().unique();
    t.text('prefix').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('expires_at', { useTz: true }).nullable();
    t.timestamp('revoked_at', { useTz: true }).nullable();
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['user_id']);
    t.index(['updated_at']);
  });

  await knex.schema.createTable('refresh_sessions', (t) => {
    t.bigIncrements('id').primary();
    t.bigInteger('user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.text('token_hash').notNullable().unique();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('revoked_at', { useTz: true }).nullable();
    t.index(['user_id']);
  });

  await knex.schema.createTable('login_events', (t) => {
    t.bigIncrements('id').primary();
    t.bigInteger('user_id').nullable().references('users.id').onDelete('SET NULL');
    t.text('email').nullable();
    t.text('ip').nullable();
    t.text('user_agent').nullable();
    t.text('outcome').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['created_at']);
    t.index(['user_id', 'created_at']);
  });

  await knex.schema.createTable('email_verifications', (t) => {
    t.bigIncrements('id').primary();
    t.bigInteger('user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.text('token_hash').notNullable().unique();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('consumed_at', { useTz: true }).nullable();
  });

  await knex.schema.createTable('email_outbox', (t) => {
    t.bigIncrements('id').primary();
    t.text('recipient').notNullable();
    t.text('kind').notNullable();
    t.text('subject').notNullable();
    t.text('body').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('sent_at', { useTz: true }).nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await dropTablesRefusingRows(knex, '20261121010000_identity', TABLES);
}
