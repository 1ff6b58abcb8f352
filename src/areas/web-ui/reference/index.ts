import type { FastifyInstance } from "fastify";
import type { WebUiDeps } from "../index.js";

/**
 * The native API reference (`/reference/api`, issue 16 section 1) in the web UI's look.
 */
export async function registerReferencePages(_app: FastifyInstance, _deps: WebUiDeps): Promise<void> {}
