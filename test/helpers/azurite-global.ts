import type { TestProject } from "vitest/node";
import { startAzurite } from "./azurite.js";
import { postgresInstalled } from "./postgres.js";

/**
 * vitest global setup of the "postgres" project (postgres-suites.ts): one Azurite for the whole
 * run, the package store every PostgreSQL test app needs (cluster mode refuses the data
 * directory's disk); each app gets a container of its own (postgres-test-app.ts). Started only
 * where the project has tests to run: without PostgreSQL it runs none.
 */
export default async function setup(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  if (!postgresInstalled()) return undefined;
  const azurite = await startAzurite();
  project.provide("azuriteConnectionString", azurite.connectionString());
  return () => azurite.stop();
}

declare module "vitest" {
  export interface ProvidedContext {
    /** The run's Azurite (built-in account); absent outside the "postgres" project. */
    azuriteConnectionString?: string;
  }
}
