import fs from "node:fs";
import path from "node:path";
import { buildApp } from "./app.js";
import { ADMIN_KEY_FILE, bootstrapAdminKey } from "./areas/security/bootstrap.js";
import { ConfigError, type Config, loadConfig } from "./config.js";
import { systemClock } from "./domain/clock.js";
import { createFileBlobStore } from "./storage/file-blob-store.js";
import { openDatabase } from "./storage/database.js";

/** Process entry: configuration, storage, bootstrap, listen; graceful close on SIGTERM/SIGINT. */
export async function serve(config: Config): Promise<void> {
  fs.mkdirSync(config.dataDir, { recursive: true });
  const db = openDatabase(path.join(config.dataDir, "wharf.sqlite"));
  const blobs = createFileBlobStore(config.dataDir);
  const app = await buildApp(config, { db, blobs });
  const stale = await blobs.clearStaleTemporaryFiles();
  if (stale > 0) app.log.info({ removed: stale }, "removed temporary files left by an earlier process");

  const generated = bootstrapAdminKey(db, config.dataDir, config.adminApiKey, systemClock);
  if (generated) {
    // Printed once, on the first start only; it is also in the file, readable by the owner alone.
    process.stdout.write(
      `\nA full-control API key was created for you (also saved in ${path.join(config.dataDir, ADMIN_KEY_FILE)}):\n\n    ${generated}\n\n`,
    );
  }

  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    app.log.info({ signal }, "shutting down: finishing in-flight requests");
    try {
      await app.close(); // stops accepting, waits for in-flight requests
      db.close();
      process.exit(0);
    } catch (error) {
      app.log.error({ err: error }, "error while shutting down");
      process.exit(1);
    }
  };
  process.once("SIGTERM", () => void shutdown("SIGTERM"));
  process.once("SIGINT", () => void shutdown("SIGINT"));

  const address = await app.listen({ port: config.port, host: config.host });
  app.log.info({ url: config.baseUrl ?? address, dataDir: config.dataDir }, `Wharf listening on ${address}`);
}

const isEntry = process.argv[1] !== undefined && import.meta.url.endsWith(path.basename(process.argv[1]));
if (isEntry) {
  try {
    await serve(loadConfig(process.env));
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
}
