import { inTransaction, type PostgresDb, readRows } from "../../storage/postgres/database.js";
import type { SecretBox } from "../../storage/secrets.js";
import { type GlobalVariableRow, globalVariablesOf } from "./infrastructure-repository.js";
import { readVariableColumn, writeVariableColumn } from "./variables-model.js";
import {
  ENTITY_TYPES,
  entityNotFound,
  globalRowsOf,
  VARIABLE_TABLES,
  type VariablesRepository,
} from "./variables-repository.js";

const GLOBALS = "SELECT name, value, sensitive FROM global_variables ORDER BY name_key";

/**
 * VariablesRepository on PostgreSQL (cluster mode). An edit reads, changes and writes back what it
 * locked first, so that two nodes editing one scope take turns as SQLite's writers do, the second
 * reading the first's result: an entity's row `FOR UPDATE` (deleted meanwhile: not found, as on
 * SQLite), the global variables by locking their table against other writers (readers go on).
 */
export function createPostgresVariablesRepository(db: PostgresDb, secrets: SecretBox): VariablesRepository {
  return {
    async read(scope) {
      if (scope.type === "global") return globalVariablesOf(await readRows<GlobalVariableRow>(db, GLOBALS), secrets);
      const [row] = await readRows<{ variables: string }>(
        db,
        `SELECT variables FROM ${VARIABLE_TABLES[scope.type]} WHERE name_key = $1`,
        [scope.name.toLowerCase()],
      );
      if (!row) throw entityNotFound(scope);
      return readVariableColumn(row.variables, secrets);
    },
    edit: (scope, change) =>
      inTransaction(db, async (client) => {
        if (scope.type === "global") {
          // EXCLUSIVE: every other writer of the table waits until this commits; READ COMMITTED
          // then reads the rows as they are after the lock, not as they were before it.
          await client.query("LOCK TABLE global_variables IN EXCLUSIVE MODE");
          const variables = new Map(globalVariablesOf((await client.query<GlobalVariableRow>(GLOBALS)).rows, secrets));
          const result = change(variables);
          // One row per name_key, the last given winning (SQLite's upsert, row by row).
          const rows = [...new Map(globalRowsOf(variables, secrets).map((r) => [r.name.toLowerCase(), r])).values()];
          await client.query("DELETE FROM global_variables");
          if (rows.length > 0) {
            await client.query(
              `INSERT INTO global_variables (name, name_key, value, sensitive)
               SELECT v.name, lower(v.name), v.value, v.sensitive FROM unnest($1::text[], $2::text[], $3::int[]) AS v(name, value, sensitive)`,
              [rows.map((r) => r.name), rows.map((r) => r.value), rows.map((r) => r.sensitive)],
            );
          }
          return result;
        }
        const table = VARIABLE_TABLES[scope.type];
        const { rows } = await client.query<{ id: number; variables: string }>(
          `SELECT id, variables FROM ${table} WHERE name_key = $1 FOR UPDATE`,
          [scope.name.toLowerCase()],
        );
        const row = rows[0];
        if (!row) throw entityNotFound(scope);
        const variables = readVariableColumn(row.variables, secrets);
        const result = change(variables);
        await client.query(`UPDATE ${table} SET variables = $1 WHERE id = $2`, [
          writeVariableColumn(variables, secrets),
          row.id,
        ]);
        return result;
      }),
    async all() {
      const globals = globalVariablesOf(await readRows<GlobalVariableRow>(db, GLOBALS), secrets);
      const owners = [];
      for (const type of ENTITY_TYPES) {
        const rows = await readRows<{ name: string; variables: string }>(
          db,
          `SELECT name, variables FROM ${VARIABLE_TABLES[type]} ORDER BY name_key`,
        );
        for (const row of rows)
          owners.push({ type, name: row.name, variables: readVariableColumn(row.variables, secrets) });
      }
      return { globals, owners };
    },
  };
}
