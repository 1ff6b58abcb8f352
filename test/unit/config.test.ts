import path from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.js";

const CWD = path.resolve("/srv/wharf");

function configError(env: NodeJS.ProcessEnv): ConfigError {
  try {
    loadConfig(env, CWD);
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error("expected a ConfigError");
}

describe("loadConfig", () => {
  it("uses the documented defaults when nothing is set", () => {
    expect(loadConfig({}, CWD)).toEqual({
      port: 8624,
      host: "0.0.0.0",
      dataDir: path.join(CWD, "data"),
      adminApiKey: undefined,
      baseUrl: undefined,
      trustProxy: undefined,
      signIn: {
        addressFailures: 10,
        failureWindowSeconds: 60,
        userFreeFailures: 5,
        maxWaitSeconds: 300,
        passwordChecks: 2,
      },
      uiSessions: { idleMinutes: 480, absoluteHours: 168 },
      maxUploadBytes: 10 * 1024 ** 3,
      minFreeDiskBytes: 512 * 1024 ** 2,
      contentUrlUploads: false,
      fetchAllowPrivate: false,
      fetchTimeoutMs: 30000,
      fetchMaxBytes: 10 * 1024 ** 3,
      multipartMaxAgeMs: 24 * 3_600_000,
      gcIntervalMs: 24 * 3_600_000,
      retentionCheckMs: 30_000,
      auditRetentionDays: 365,
      archiveMaxEntries: 10_000,
      archiveMaxRatio: 100,
      archiveMaxSeconds: 2,
      importRoot: undefined,
      connectorHealthIntervalMs: 3_600_000,
      connectorNegativeCacheMs: 60_000,
      deployRoot: undefined,
      deployConcurrency: 2,
      deployStopTimeoutMs: 10_000,
      jobLeaseMs: 30_000,
      configCheckIntervalMs: 3_600_000,
      configCheckConcurrency: 4,
      agentLeaseMs: 300_000,
      agentOfflineMs: 120_000,
      sshTimeoutMs: 20_000,
      databaseBusyWaitMs: 5_000,
      connections: {
        headersTimeoutMs: 30_000,
        stallTimeoutMs: 30_000,
        keepAliveTimeoutMs: 10_000,
        max: undefined,
        maxPerAddress: 256,
      },
      preAuthBody: { maxBytes: 65_536, timeoutMs: 30_000 },
      compression: { minBytes: 1024, brotliQuality: 4 },
      secretKeys: { previous: [] },
      webhooks: {
        timeoutMs: 10_000,
        attempts: 8,
        retryFirstMs: 30_000,
        retryMaxMs: 3_600_000,
        concurrency: 4,
        pollMs: 5_000,
      },
      logLevel: "info",
    });
  });

  it("parses every variable", () => {
    const config = loadConfig(
      {
        WHARF_PORT: "9000",
        WHARF_HOST: "127.0.0.1",
        WHARF_DATA_DIR: "/var/lib/wharf",
        WHARF_ADMIN_API_KEY: "0123456789abcdef-ADMIN",
        WHARF_BASE_URL: "https://packages.example.com/wharf",
        WHARF_TRUST_PROXY: "10.0.0.0/8, 192.168.1.2,fd00::/8",
        WHARF_AUTH_ADDRESS_FAILURES: "20",
        WHARF_AUTH_FAILURE_WINDOW_SECONDS: "120",
        WHARF_AUTH_USER_FREE_FAILURES: "0",
        WHARF_AUTH_MAX_WAIT_SECONDS: "900",
        WHARF_AUTH_PASSWORD_CHECKS: "4",
        WHARF_UI_SESSION_IDLE_MINUTES: "30",
        WHARF_UI_SESSION_HOURS: "12",
        WHARF_MAX_UPLOAD_BYTES: "1048576",
        WHARF_MIN_FREE_DISK_BYTES: "0",
        WHARF_CONTENT_URL_UPLOADS: "true",
        WHARF_FETCH_ALLOW_PRIVATE: "yes",
        WHARF_FETCH_TIMEOUT_MS: "5000",
        WHARF_FETCH_MAX_BYTES: "2048",
        WHARF_MULTIPART_MAX_AGE_HOURS: "1.5",
        WHARF_GC_INTERVAL_HOURS: "0",
        WHARF_RETENTION_CHECK_SECONDS: "5",
        WHARF_ARCHIVE_MAX_ENTRIES: "20000",
        WHARF_ARCHIVE_MAX_RATIO: "1000",
        WHARF_ARCHIVE_MAX_SECONDS: "0.5",
        WHARF_IMPORT_ROOT: "imports",
        WHARF_CONNECTOR_HEALTH_INTERVAL_MINUTES: "5",
        WHARF_CONNECTOR_NEGATIVE_CACHE_SECONDS: "0",
        WHARF_DEPLOY_ROOT: "deployments",
        WHARF_DEPLOY_CONCURRENCY: "0",
        WHARF_DEPLOY_STOP_SECONDS: "0.5",
        WHARF_JOB_LEASE_SECONDS: "5",
        WHARF_CONFIG_CHECK_MINUTES: "0.5",
        WHARF_CONFIG_CHECK_CONCURRENCY: "2",
        WHARF_AGENT_LEASE_SECONDS: "30",
        WHARF_AGENT_OFFLINE_SECONDS: "45",
        WHARF_SSH_TIMEOUT_SECONDS: "5",
        WHARF_DB_BUSY_WAIT_MS: "0",
        WHARF_HEADERS_TIMEOUT_SECONDS: "20",
        WHARF_STALL_TIMEOUT_SECONDS: "0.25",
        WHARF_KEEP_ALIVE_TIMEOUT_SECONDS: "5",
        WHARF_MAX_CONNECTIONS: "2000",
        WHARF_MAX_CONNECTIONS_PER_ADDRESS: "64",
        WHARF_PRE_AUTH_BODY_BYTES: "16384",
        WHARF_PRE_AUTH_BODY_TIMEOUT_SECONDS: "10",
        WHARF_COMPRESSION_MIN_BYTES: "0",
        WHARF_COMPRESSION_BROTLI_QUALITY: "11",
        WHARF_SECRET_KEY_FILE: "keys/wharf.key",
        WHARF_SECRET_KEY_PREVIOUS: `${"ab".repeat(32)}, ${"A".repeat(43)}=`,
        WHARF_AUDIT_RETENTION_DAYS: "90",
        WHARF_WEBHOOK_TIMEOUT_SECONDS: "2.5",
        WHARF_WEBHOOK_ATTEMPTS: "3",
        WHARF_WEBHOOK_RETRY_SECONDS: "10",
        WHARF_WEBHOOK_RETRY_MAX_SECONDS: "60",
        WHARF_WEBHOOK_CONCURRENCY: "16",
        WHARF_WEBHOOK_POLL_SECONDS: "0.5",
        WHARF_LOG_LEVEL: "debug",
      },
      CWD,
    );
    expect(config).toEqual({
      port: 9000,
      host: "127.0.0.1",
      dataDir: path.resolve("/var/lib/wharf"),
      adminApiKey: "0123456789abcdef-ADMIN",
      baseUrl: "https://packages.example.com/wharf",
      trustProxy: ["10.0.0.0/8", "192.168.1.2", "fd00::/8"],
      signIn: {
        addressFailures: 20,
        failureWindowSeconds: 120,
        userFreeFailures: 0,
        maxWaitSeconds: 900,
        passwordChecks: 4,
      },
      uiSessions: { idleMinutes: 30, absoluteHours: 12 },
      maxUploadBytes: 1048576,
      minFreeDiskBytes: 0,
      contentUrlUploads: true,
      fetchAllowPrivate: true,
      fetchTimeoutMs: 5000,
      fetchMaxBytes: 2048,
      multipartMaxAgeMs: 1.5 * 3_600_000,
      gcIntervalMs: 0,
      retentionCheckMs: 5_000,
      auditRetentionDays: 90,
      archiveMaxEntries: 20_000,
      archiveMaxRatio: 1000,
      archiveMaxSeconds: 0.5,
      importRoot: path.join(CWD, "imports"),
      connectorHealthIntervalMs: 300_000,
      connectorNegativeCacheMs: 0,
      deployRoot: path.join(CWD, "deployments"),
      deployConcurrency: 0,
      deployStopTimeoutMs: 500,
      jobLeaseMs: 5_000,
      configCheckIntervalMs: 30_000,
      configCheckConcurrency: 2,
      agentLeaseMs: 30_000,
      agentOfflineMs: 45_000,
      sshTimeoutMs: 5_000,
      databaseBusyWaitMs: 0,
      connections: {
        headersTimeoutMs: 20_000,
        stallTimeoutMs: 250,
        keepAliveTimeoutMs: 5_000,
        max: 2000,
        maxPerAddress: 64,
      },
      preAuthBody: { maxBytes: 16_384, timeoutMs: 10_000 },
      compression: { minBytes: 0, brotliQuality: 11 },
      secretKeys: { file: path.join(CWD, "keys/wharf.key"), previous: ["ab".repeat(32), `${"A".repeat(43)}=`] },
      webhooks: {
        timeoutMs: 2_500,
        attempts: 3,
        retryFirstMs: 10_000,
        retryMaxMs: 60_000,
        concurrency: 16,
        pollMs: 500,
      },
      logLevel: "debug",
    });
  });

  it("accepts port 0 (any free port) and every log level", () => {
    expect(loadConfig({ WHARF_PORT: "0" }, CWD).port).toBe(0);
    for (const level of ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const) {
      expect(loadConfig({ WHARF_LOG_LEVEL: level }, CWD).logLevel).toBe(level);
    }
  });

  it("treats empty variables as unset", () => {
    const config = loadConfig(
      {
        WHARF_PORT: "",
        WHARF_HOST: "",
        WHARF_DATA_DIR: "",
        WHARF_ADMIN_API_KEY: "",
        WHARF_BASE_URL: "",
        WHARF_MAX_UPLOAD_BYTES: "",
        WHARF_CONTENT_URL_UPLOADS: "",
        WHARF_FETCH_ALLOW_PRIVATE: "",
        WHARF_FETCH_TIMEOUT_MS: "",
        WHARF_FETCH_MAX_BYTES: "",
        WHARF_LOG_LEVEL: "",
      },
      CWD,
    );
    expect(config).toEqual(loadConfig({}, CWD));
  });

  it("ignores variables that are not WHARF_*", () => {
    expect(loadConfig({ PORT: "abc", HOME: "/root", WHARF: "x" }, CWD)).toEqual(loadConfig({}, CWD));
  });

  it("reads the fetch switches as booleans in every usual spelling, any case", () => {
    for (const [text, value] of [
      ["true", true],
      ["TRUE", true],
      ["1", true],
      ["Yes", true],
      ["false", false],
      ["False", false],
      ["0", false],
      ["NO", false],
    ] as const) {
      const config = loadConfig({ WHARF_CONTENT_URL_UPLOADS: text, WHARF_FETCH_ALLOW_PRIVATE: text }, CWD);
      expect([config.contentUrlUploads, config.fetchAllowPrivate]).toEqual([value, value]);
    }
  });

  it("bounds fetched bodies by the upload limit unless told otherwise", () => {
    expect(loadConfig({ WHARF_MAX_UPLOAD_BYTES: "4096" }, CWD).fetchMaxBytes).toBe(4096);
    expect(loadConfig({ WHARF_MAX_UPLOAD_BYTES: "4096", WHARF_FETCH_MAX_BYTES: "99" }, CWD).fetchMaxBytes).toBe(99);
    // Larger than the upload limit is allowed: connectors may mirror what nobody uploads here.
    expect(loadConfig({ WHARF_MAX_UPLOAD_BYTES: "10", WHARF_FETCH_MAX_BYTES: "20" }, CWD).fetchMaxBytes).toBe(20);
  });

  it("trims trailing slashes from the base URL", () => {
    expect(loadConfig({ WHARF_BASE_URL: "http://proxy.example:8080/" }, CWD).baseUrl).toBe("http://proxy.example:8080");
    expect(loadConfig({ WHARF_BASE_URL: "https://example.com/wharf///" }, CWD).baseUrl).toBe(
      "https://example.com/wharf",
    );
  });

  it("resolves a relative data dir against the working directory", () => {
    expect(loadConfig({ WHARF_DATA_DIR: "store/../wharf-data" }, CWD).dataDir).toBe(path.join(CWD, "wharf-data"));
    expect(loadConfig({ WHARF_DATA_DIR: "./data" }, "/other").dataDir).toBe(path.resolve("/other/data"));
    expect(path.isAbsolute(loadConfig({}).dataDir)).toBe(true);
  });

  it("returns a frozen object", () => {
    expect(Object.isFrozen(loadConfig({}, CWD))).toBe(true);
  });

  it.each([
    ["WHARF_PORT", "abc"],
    ["WHARF_PORT", "65536"],
    ["WHARF_PORT", "-1"],
    ["WHARF_PORT", "80.5"],
    ["WHARF_PORT", "0x10"],
    ["WHARF_PORT", "1e3"],
    ["WHARF_ADMIN_API_KEY", "short"],
    ["WHARF_ADMIN_API_KEY", "has a space in it, and long enough"],
    ["WHARF_ADMIN_API_KEY", "change-me-to-a-long-secret"],
    ["WHARF_ADMIN_API_KEY", "CHANGEME-0123456789abcdef"],
    ["WHARF_BASE_URL", "not a url"],
    ["WHARF_BASE_URL", "ftp://example.com"],
    ["WHARF_TRUST_PROXY", "true"],
    ["WHARF_TRUST_PROXY", "10.0.0.0/33"],
    ["WHARF_TRUST_PROXY", "10.0.0.1,proxy.example.com"],
    ["WHARF_AUTH_ADDRESS_FAILURES", "0"],
    ["WHARF_COMPRESSION_MIN_BYTES", "-1"],
    ["WHARF_COMPRESSION_MIN_BYTES", "1k"],
    ["WHARF_COMPRESSION_BROTLI_QUALITY", "12"],
    ["WHARF_AUTH_FAILURE_WINDOW_SECONDS", "1.5"],
    ["WHARF_AUTH_USER_FREE_FAILURES", "-1"],
    ["WHARF_AUTH_MAX_WAIT_SECONDS", "5m"],
    ["WHARF_AUTH_PASSWORD_CHECKS", "65"],
    ["WHARF_UI_SESSION_IDLE_MINUTES", "4"],
    ["WHARF_UI_SESSION_HOURS", "0"],
    ["WHARF_UI_SESSION_HOURS", "8761"],
    ["WHARF_MAX_UPLOAD_BYTES", "0"],
    ["WHARF_MAX_UPLOAD_BYTES", "lots"],
    ["WHARF_MAX_UPLOAD_BYTES", "1e9"],
    ["WHARF_MIN_FREE_DISK_BYTES", "-1"],
    ["WHARF_MIN_FREE_DISK_BYTES", "1GB"],
    ["WHARF_LOG_LEVEL", "loud"],
    ["WHARF_CONTENT_URL_UPLOADS", "on"],
    ["WHARF_CONTENT_URL_UPLOADS", "truee"],
    ["WHARF_FETCH_ALLOW_PRIVATE", "y"],
    ["WHARF_FETCH_ALLOW_PRIVATE", "2"],
    ["WHARF_FETCH_TIMEOUT_MS", "0"],
    ["WHARF_FETCH_TIMEOUT_MS", "1.5"],
    ["WHARF_FETCH_TIMEOUT_MS", "30s"],
    ["WHARF_FETCH_TIMEOUT_MS", "2147483648"],
    ["WHARF_FETCH_MAX_BYTES", "0"],
    ["WHARF_FETCH_MAX_BYTES", "1MB"],
    ["WHARF_MULTIPART_MAX_AGE_HOURS", "0"],
    ["WHARF_MULTIPART_MAX_AGE_HOURS", "-1"],
    ["WHARF_MULTIPART_MAX_AGE_HOURS", "1h"],
    ["WHARF_MULTIPART_MAX_AGE_HOURS", "9000"],
    ["WHARF_GC_INTERVAL_HOURS", "-1"],
    ["WHARF_GC_INTERVAL_HOURS", "1d"],
    ["WHARF_GC_INTERVAL_HOURS", "501"],
    ["WHARF_RETENTION_CHECK_SECONDS", "3601"],
    ["WHARF_RETENTION_CHECK_SECONDS", "1.5"],
    ["WHARF_WEBHOOK_TIMEOUT_SECONDS", "0"],
    ["WHARF_WEBHOOK_TIMEOUT_SECONDS", "301"],
    ["WHARF_WEBHOOK_ATTEMPTS", "0"],
    ["WHARF_WEBHOOK_RETRY_SECONDS", "30s"],
    ["WHARF_WEBHOOK_CONCURRENCY", "65"],
    ["WHARF_WEBHOOK_POLL_SECONDS", "0"],
    ["WHARF_ARCHIVE_MAX_ENTRIES", "100001"],
    ["WHARF_ARCHIVE_MAX_RATIO", "9"],
    ["WHARF_ARCHIVE_MAX_SECONDS", "0.05"],
    ["WHARF_CONNECTOR_NEGATIVE_CACHE_SECONDS", "-1"],
    ["WHARF_CONNECTOR_NEGATIVE_CACHE_SECONDS", "1.5"],
    ["WHARF_CONNECTOR_NEGATIVE_CACHE_SECONDS", "86401"],
    ["WHARF_JOB_LEASE_SECONDS", "0"],
    ["WHARF_JOB_LEASE_SECONDS", "2"],
    ["WHARF_JOB_LEASE_SECONDS", "3601"],
    ["WHARF_JOB_LEASE_SECONDS", "4.5"],
    ["WHARF_JOB_LEASE_SECONDS", "30s"],
    ["WHARF_DB_BUSY_WAIT_MS", "-1"],
    ["WHARF_DB_BUSY_WAIT_MS", "5s"],
    ["WHARF_DB_BUSY_WAIT_MS", "60001"],
    ["WHARF_HEADERS_TIMEOUT_SECONDS", "0"],
    ["WHARF_STALL_TIMEOUT_SECONDS", "30s"],
    ["WHARF_KEEP_ALIVE_TIMEOUT_SECONDS", "-1"],
    ["WHARF_KEEP_ALIVE_TIMEOUT_SECONDS", "3601"],
    ["WHARF_MAX_CONNECTIONS", "0"],
    ["WHARF_MAX_CONNECTIONS_PER_ADDRESS", "many"],
    ["WHARF_PRE_AUTH_BODY_BYTES", "1023"],
    ["WHARF_PRE_AUTH_BODY_BYTES", "1048577"],
    ["WHARF_PRE_AUTH_BODY_TIMEOUT_SECONDS", "0"],
  ])("refuses %s=%s, naming the variable", (name, value) => {
    const error = configError({ [name]: value });
    expect(error.message).toContain(name);
    // The value is not echoed back: WHARF_ADMIN_API_KEY is a secret.
    if (name === "WHARF_ADMIN_API_KEY") expect(error.message).not.toContain(value);
  });

  it("names every bad variable in one error, and only those", () => {
    const error = configError({
      WHARF_PORT: "abc",
      WHARF_LOG_LEVEL: "loud",
      WHARF_BASE_URL: "nope",
      WHARF_MAX_UPLOAD_BYTES: "-5",
      WHARF_FETCH_ALLOW_PRIVATE: "maybe",
      WHARF_FETCH_TIMEOUT_MS: "-1",
      WHARF_CONTENT_URL_UPLOADS: "false",
      WHARF_HOST: "127.0.0.1",
      WHARF_DATA_DIR: "/data",
    });
    expect(error.name).toBe("ConfigError");
    for (const name of [
      "WHARF_PORT",
      "WHARF_LOG_LEVEL",
      "WHARF_BASE_URL",
      "WHARF_MAX_UPLOAD_BYTES",
      "WHARF_FETCH_ALLOW_PRIVATE",
      "WHARF_FETCH_TIMEOUT_MS",
    ]) {
      expect(error.message).toContain(name);
    }
    expect(error.message).not.toContain("WHARF_HOST");
    expect(error.message).not.toContain("WHARF_DATA_DIR");
    expect(error.message).not.toContain("WHARF_CONTENT_URL_UPLOADS");
    expect(error.message.split("\n")).toHaveLength(1);
  });

  it("says what a good value looks like", () => {
    const error = configError({ WHARF_PORT: "abc", WHARF_LOG_LEVEL: "loud" });
    expect(error.message).toContain("WHARF_PORT: must be a port number from 0 to 65535");
    expect(error.message).toContain("WHARF_LOG_LEVEL: must be one of fatal, error, warn, info, debug, trace, silent");
    const flags = configError({ WHARF_FETCH_ALLOW_PRIVATE: "on", WHARF_FETCH_TIMEOUT_MS: "soon" });
    expect(flags.message).toContain("WHARF_FETCH_ALLOW_PRIVATE: must be true or false (also 1/0, yes/no)");
    expect(flags.message).toContain("WHARF_FETCH_TIMEOUT_MS: must be a whole number of milliseconds greater than 0");
  });
});
