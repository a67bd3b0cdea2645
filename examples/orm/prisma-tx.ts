/**
 * Prisma (7, with driver adapters) on oncely's `tx` (`req.oncely.tx` with `transaction: true`): a
 * driver adapter whose queries run through `tx`, so `await prisma.order.create(…)` commits with the
 * key and the stored response, or not at all. Give a request's client its own adapter:
 * `new PrismaClient({ adapter: prismaOver(tx) })`.
 *
 * Prisma opens a transaction of its own for a nested write; here it is a savepoint of the request's
 * transaction, so the request's one commit stays the only one. Prisma wants each result with its
 * columns' types, which `tx` does not report: they are read off the values (`tx` answers rows as
 * `pg` parses them), enough for the model's own queries, which map each field by its declared type.
 */
import {
  ColumnTypeEnum,
  type ColumnType,
  type SqlDriverAdapter,
  type SqlDriverAdapterFactory,
  type SqlQuery,
  type SqlResultSet,
} from '@prisma/driver-adapter-utils';
import type { Tx } from '../../src/server/index.js';

/** A column's type, read off its first non-null value. */
function typeOf(values: readonly unknown[]): ColumnType {
  const value = values.find((v) => v !== null && v !== undefined);
  if (typeof value === 'number') return Number.isInteger(value) ? ColumnTypeEnum.Int32 : ColumnTypeEnum.Double;
  if (typeof value === 'boolean') return ColumnTypeEnum.Boolean;
  if (typeof value === 'bigint') return ColumnTypeEnum.Int64;
  if (value instanceof Date) return ColumnTypeEnum.DateTime;
  if (value instanceof Uint8Array) return ColumnTypeEnum.Bytes;
  if (typeof value === 'object') return ColumnTypeEnum.Json;
  return ColumnTypeEnum.Text;
}

/** A Prisma driver adapter whose statements run in `tx` (`schemaName`: the schema of Prisma's models, when not `public`). */
export function prismaOver(tx: Tx, schemaName?: string): SqlDriverAdapterFactory {
  let savepoints = 0;
  const queryable = {
    provider: 'postgres',
    adapterName: 'oncely-tx',
    async queryRaw(query: SqlQuery): Promise<SqlResultSet> {
      const objects = await tx.all(query.sql, query.args);
      const columnNames = objects[0] ? Object.keys(objects[0]) : [];
      // As Prisma's own pg adapter answers them: a timestamp as its ISO text.
      const rows = objects.map((row) => Object.values(row).map((v) => (v instanceof Date ? v.toISOString() : v)));
      return { columnNames, columnTypes: columnNames.map((_, i) => typeOf(objects.map((row) => Object.values(row)[i]))), rows };
    },
    executeRaw: (query: SqlQuery): Promise<number> => tx.run(query.sql, query.args),
  } as const;
  const adapter: SqlDriverAdapter = {
    ...queryable,
    executeScript: () => Promise.reject(new Error('oncely tx: a script (a migration) does not run inside a request')),
    async startTransaction() {
      const name = `oncely_prisma_${(savepoints += 1)}`;
      await tx.run(`SAVEPOINT ${name}`);
      return {
        ...queryable,
        // Prisma's COMMIT and ROLLBACK are not sent: these two end the savepoint instead.
        options: { usePhantomQuery: true },
        commit: async () => void (await tx.run(`RELEASE SAVEPOINT ${name}`)),
        rollback: async () => void (await tx.run(`ROLLBACK TO SAVEPOINT ${name}`)),
      };
    },
    getConnectionInfo: () => (schemaName === undefined ? { supportsRelationJoins: true } : { schemaName, supportsRelationJoins: true }),
    dispose: async () => undefined,
  };
  return { provider: 'postgres', adapterName: 'oncely-tx', connect: async () => adapter };
}
