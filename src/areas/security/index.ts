// PLACEHOLDER: replaced by the security endpoints implementation.
import type { FastifyPluginAsync } from "fastify";
import type { Clock } from "../../domain/clock.js";
import type { Db } from "../../storage/database.js";
import type { FeedService } from "../management/index.js";

export const securityArea: FastifyPluginAsync<{ db: Db; clock: Clock; feeds: FeedService }> = async () => {};
