/**
 * The integration test files that also run on PostgreSQL (issue 18: the same behaviour on both
 * databases), in the vitest project "postgres" (vitest.config.ts) with WHARF_TEST_DATABASE=postgres:
 * buildTestApp then builds a cluster node (postgres-test-app.ts). A file belongs here once it
 * passes there. Files stay SQLite-only when they read or write SQLite directly (`t.db`,
 * `writeFromOutside`, and the helpers that do: fixtures.ts's keys, users and grants,
 * upack-fixtures.ts's addVersion, releases-fixtures.ts), run the CLI on the data directory, or
 * look at the disk store (blobs under the data directory, an empty tmp/, blobs deleted at once:
 * a cluster deletes them only by garbage collection).
 */
export const POSTGRES_SUITES: readonly string[] = [
  "test/integration/endpoints-folders.test.ts",
  "test/integration/export-compression.test.ts",
  "test/integration/fuzz-bounds.test.ts",
  "test/integration/infrastructure-roles.test.ts",
  "test/integration/lifecycle-flow.test.ts",
  "test/integration/native-reference.test.ts",
  "test/integration/object-store-requests.test.ts",
  "test/integration/operations.test.ts",
  "test/integration/outbound-proxy-app.test.ts",
  "test/integration/pre-auth-body.test.ts",
  "test/integration/promotion-stores.test.ts",
  "test/integration/settings-named.test.ts",
  "test/integration/slow-clients.test.ts",
  "test/integration/upack-content-url.test.ts",
  "test/integration/upack-upload-metadata.test.ts",
  "test/integration/web-ui-frame.test.ts",
  "test/integration/webhooks-cli.test.ts",
];
