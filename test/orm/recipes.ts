/**
 * The same two statements of an order handler written with each ORM's own query builder, run in
 * oncely's `tx` through the recipes of docs/orm.md (examples/orm): Drizzle and Kysely through a
 * driver bound to `tx`, Knex compiled and run by `tx`. The suite drives all three through one harness.
 */
import { count, eq } from 'drizzle-orm';
import { integer, pgTable, text, timestamp } from 'drizzle-orm/pg-core';
import type { Generated } from 'kysely';
import { drizzleOver } from '../../examples/orm/drizzle-tx.js';
import { knexOver, qb } from '../../examples/orm/knex-tx.js';
import { kyselyOver } from '../../examples/orm/kysely-tx.js';
import type { Tx } from '../../src/server/index.js';

/** The app's table, created next to the key table. */
export const ORDERS_DDL =
  'CREATE TABLE IF NOT EXISTS orders (id text PRIMARY KEY, key text NOT NULL, attempt integer NOT NULL, created_at timestamptz NOT NULL DEFAULT now())';

/** An order as the handler reads it back through its ORM. */
export interface Order {
  readonly id: string;
  readonly key: string;
  readonly attempt: number;
  readonly createdAt: Date;
}

export interface OrmRecipe {
  /** INSERTs the order through the ORM's builder and returns the row as the ORM read it back (`RETURNING`). */
  insert(tx: Tx, order: Omit<Order, 'createdAt'>): Promise<Order>;
  /** How many orders of `key` the ORM sees inside `tx`. */
  count(tx: Tx, key: string): Promise<number>;
  /** UPDATEs the orders of `key` (to the same values) and returns how many rows the ORM says changed. */
  touch(tx: Tx, key: string): Promise<number>;
}

const drizzleOrders = pgTable('orders', {
  id: text('id').primaryKey(),
  key: text('key').notNull(),
  attempt: integer('attempt').notNull(),
  createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
});

interface KyselyDb {
  orders: { id: string; key: string; attempt: number; created_at: Generated<Date> };
}

interface OrderRow {
  readonly id: string;
  readonly key: string;
  readonly attempt: number;
  readonly created_at: Date;
}

const fromRow = (row: OrderRow): Order => ({ id: row.id, key: row.key, attempt: row.attempt, createdAt: row.created_at });

export const RECIPES = {
  drizzle: {
    async insert(tx, order) {
      const [row] = await drizzleOver(tx).insert(drizzleOrders).values(order).returning();
      return row!;
    },
    async count(tx, key) {
      const [row] = await drizzleOver(tx).select({ n: count() }).from(drizzleOrders).where(eq(drizzleOrders.key, key));
      return row!.n;
    },
    async touch(tx, key) {
      // pg-proxy answers a write without RETURNING with no count: read the rows back to count them.
      return (await drizzleOver(tx).update(drizzleOrders).set({ key }).where(eq(drizzleOrders.key, key)).returning({ id: drizzleOrders.id })).length;
    },
  },
  kysely: {
    async insert(tx, order) {
      return fromRow(await kyselyOver<KyselyDb>(tx).insertInto('orders').values(order).returningAll().executeTakeFirstOrThrow());
    },
    async count(tx, key) {
      const db = kyselyOver<KyselyDb>(tx);
      const row = await db
        .selectFrom('orders')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .where('key', '=', key)
        .executeTakeFirstOrThrow();
      return Number(row.n);
    },
    async touch(tx, key) {
      // No RETURNING: the recipe runs it as tx.run, and Kysely reports tx's count.
      const result = await kyselyOver<KyselyDb>(tx).updateTable('orders').set({ key }).where('key', '=', key).executeTakeFirstOrThrow();
      return Number(result.numUpdatedRows);
    },
  },
  knex: {
    async insert(tx, order) {
      const [row] = await knexOver(tx).all<OrderRow>(qb('orders').insert(order).returning('*'));
      return fromRow(row!);
    },
    async count(tx, key) {
      const row = await knexOver(tx).get<{ n: string }>(qb('orders').where({ key }).count({ n: '*' }));
      return Number(row!.n);
    },
    touch: (tx, key) => knexOver(tx).run(qb('orders').where({ key }).update({ key })),
  },
} satisfies Record<string, OrmRecipe>;

export type Orm = keyof typeof RECIPES;
