import { describe, it } from "vitest";

/**
 * The "postgres" project's only file where no PostgreSQL server is installed (vitest.config.ts):
 * the run says that the suites were skipped, and why, rather than fail or say nothing.
 */
describe.skip("the integration suites on PostgreSQL (postgres-suites.ts)", () => {
  it("need a PostgreSQL server (Debian package postgresql): none is installed", () => {});
});
