import type { FastifyInstance } from "fastify";
import type { DiskSpace } from "../storage/disk-space.js";

declare module "fastify" {
  interface FastifyContextConfig {
    /**
     * The route stores what its body carries (uploads, parts, imports): while the disk's free
     * space is below the minimum it is refused with 507 before its body is read.
     */
    storesUpload?: boolean;
  }
}

/**
 * Refuses uploads while free space is low. Registered after authentication, so that a caller who
 * may not upload hears 401/403 first; an upload refused here leaves its body unread (the routes'
 * closeConnectionsOfRefusedUploads then closes the connection instead of reading it).
 */
export function registerDiskGuard(app: FastifyInstance, disk: DiskSpace): void {
  // Synchronous (callback) hook: no promise and no extra microtask on every other request.
  app.addHook("onRequest", (request, _reply, done) => {
    if (request.routeOptions.config.storesUpload !== true) {
      done();
      return;
    }
    disk.assertRoomForUpload().then(() => done(), done);
  });
}
