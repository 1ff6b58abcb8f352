// PLACEHOLDER: replaced by the write side (upload, delete).
import type { FastifyPluginAsync } from "fastify";
import type { UpackAreaOptions } from "./index.js";

export const upackWriteRoutes: FastifyPluginAsync<UpackAreaOptions> = async () => {};
