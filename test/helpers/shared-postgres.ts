import { inject } from "vitest";
import { createDatabaseOn } from "./postgres.js";
import "./postgres-global.js";

/** The run's PostgreSQL (postgres-global.ts): guard its users with `describe.skipIf(!postgresInstalled())`. */
export interface SharedPostgres {
  /** The maintenance database, as superuser `wharf`. */
  readonly url: string;
  /** A new empty database, this caller's alone; its URL. */
  createDatabase(): Promise<string>;
}

export function testPostgres(): SharedPostgres {
  const url = inject("postgresUrl");
  if (url === undefined) throw new Error("no PostgreSQL for this run: is a PostgreSQL server installed?");
  return { url, createDatabase: () => createDatabaseOn(url) };
}
