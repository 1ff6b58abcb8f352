/**
 * The integration test files that also run on PostgreSQL (issue 18: the same behaviour on both
 * databases), in the vitest project "postgres" (vitest.config.ts) with WHARF_TEST_DATABASE=postgres:
 * buildTestApp then builds a cluster node (postgres-test-app.ts). A file belongs here once it
 * passes there. Files stay SQLite-only when they read or write SQLite directly (`t.db`,
 * `writeFromOutside`, and the helpers that do: upack-fixtures.ts's addVersion), run the CLI on the
 * data directory, or look at the disk store (blobs under the data directory, an empty tmp/, blobs
 * deleted at once: a cluster deletes them only by garbage collection). fixtures.ts's keys, users
 * and grants write to either database: pass them `t.database`.
 */
export const POSTGRES_SUITES: readonly string[] = [
  "test/integration/auth-guessing.test.ts",
  "test/integration/ci-badges.test.ts",
  "test/integration/endpoints-clients.test.ts",
  "test/integration/endpoints-folders.test.ts",
  "test/integration/export-compression.test.ts",
  "test/integration/fuzz-bounds.test.ts",
  "test/integration/infrastructure-roles.test.ts",
  "test/integration/lifecycle-flow.test.ts",
  "test/integration/native-buildmaster.test.ts",
  "test/integration/native-proget.test.ts",
  "test/integration/native-reference.test.ts",
  "test/integration/native-soap.test.ts",
  "test/integration/native.test.ts",
  "test/integration/object-store-requests.test.ts",
  "test/integration/operations.test.ts",
  "test/integration/outbound-proxy-app.test.ts",
  "test/integration/pre-auth-body.test.ts",
  "test/integration/promotion-cli.test.ts",
  "test/integration/promotion-stores.test.ts",
  "test/integration/releases-edges.test.ts",
  "test/integration/releases-execution-logs.test.ts",
  "test/integration/releases-filters.test.ts",
  "test/integration/releases-jenkins-deploy.test.ts",
  "test/integration/releases-jenkins.test.ts",
  "test/integration/releases-management.test.ts",
  "test/integration/releases-state.test.ts",
  "test/integration/security-api-keys.test.ts",
  "test/integration/security-permissions.test.ts",
  "test/integration/settings-named.test.ts",
  "test/integration/slow-clients.test.ts",
  "test/integration/upack-content-url.test.ts",
  "test/integration/upack-upload-metadata.test.ts",
  "test/integration/web-ui-assets.test.ts",
  "test/integration/web-ui-assets-browser.test.ts",
  "test/integration/web-ui-audit-browser.test.ts",
  "test/integration/web-ui-browser.test.ts",
  "test/integration/web-ui-delivery-browser.test.ts",
  "test/integration/web-ui-delivery.test.ts",
  "test/integration/web-ui-form-targets.test.ts",
  "test/integration/web-ui-frame.test.ts",
  "test/integration/web-ui-reference.test.ts",
  "test/integration/web-ui-webhooks-browser.test.ts",
  "test/integration/webhooks-cli.test.ts",
];
