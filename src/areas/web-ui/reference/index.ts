import type { FastifyInstance } from "fastify";
import type { WebUiDeps } from "../index.js";
import { registerReferenceRoutes } from "./pages.js";

/**
 * The native API reference (`/reference/api`, issue 16 section 1) in the web UI's look: its frame,
 * stylesheet and Content-Security-Policy. The one owner of these URLs (the native area no longer
 * serves them).
 */
export async function registerReferencePages(app: FastifyInstance, { nativeRegistry }: WebUiDeps): Promise<void> {
  registerReferenceRoutes(app, nativeRegistry);
}
