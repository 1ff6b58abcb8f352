// PLACEHOLDER: replaced by the read side (packages, versions, search, meta, downloads).
import type { FastifyPluginAsync } from "fastify";
import type { UpackAreaOptions } from "./index.js";

export const upackReadRoutes: FastifyPluginAsync<UpackAreaOptions> = async () => {};
