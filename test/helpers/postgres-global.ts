import type { TestProject } from "vitest/node";
import { postgresInstalled, startPostgres } from "./postgres.js";

/**
 * vitest global setup: one private PostgreSQL for the whole run, for every in-process test of
 * cluster mode (shared-postgres.ts); each test file makes databases of its own on it. Stopped
 * when the run ends, whatever the tests did: a server per file would cost each file ~2 s, and one
 * whose file crashed before its afterAll would outlive the run (pg_ctl detaches it).
 */
export default async function setup(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  if (!postgresInstalled()) return undefined;
  const server = await startPostgres();
  project.provide("postgresUrl", server.url);
  return () => server.stop();
}

declare module "vitest" {
  export interface ProvidedContext {
    /** The run's PostgreSQL maintenance database; absent when no PostgreSQL server is installed. */
    postgresUrl?: string;
  }
}
