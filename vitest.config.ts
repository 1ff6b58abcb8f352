import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";
import { postgresInstalled } from "./test/helpers/postgres.js";
import { POSTGRES_SUITES } from "./test/helpers/postgres-suites.js";

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: "forks",
    // vitest's default leaves a core to its own process, which is mostly idle: one worker on a
    // 2-core machine, while many tests wait on timers, sockets and child processes.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    projects: [
      {
        extends: true,
        // Real `wharf` processes, started from a build made once per run (test/e2e/build.ts).
        test: { name: "e2e", include: ["test/e2e/**/*.test.ts"], globalSetup: ["test/e2e/build.ts"] },
      },
      {
        extends: true,
        test: {
          name: "in-process",
          include: ["test/**/*.test.ts"],
          exclude: ["test/e2e/**"],
          // One PostgreSQL for the run's cluster-mode tests, when one is installed.
          globalSetup: ["test/helpers/postgres-global.ts"],
          // One module graph per worker, not one per file: evaluating fastify, zod and every area
          // again for each file was a quarter of the run. A test must therefore leave nothing
          // running behind it (servers closed, response bodies read or discarded, timers cleared):
          // what fires later fails in whichever file the worker runs next.
          isolate: false,
        },
      },
      {
        extends: true,
        test: {
          name: "postgres",
          // The integration files that pass on PostgreSQL too (issue 18), each app a cluster node of
          // its own (test/helpers/postgres-test-app.ts). Without a server, one skipped placeholder.
          include: postgresInstalled() ? [...POSTGRES_SUITES] : ["test/helpers/postgres-suites-skipped.ts"],
          env: { WHARF_TEST_DATABASE: "postgres" },
          globalSetup: ["test/helpers/postgres-global.ts", "test/helpers/azurite-global.ts"],
          isolate: false,
        },
      },
    ],
  },
});
