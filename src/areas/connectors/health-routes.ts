import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { notFound } from "../../domain/errors.js";
import type { AccessNeed } from "../../domain/principal.js";
import { errorText } from "../management/schemas.js";
import { connectorHealthSchema, connectorIdParams } from "./schemas.js";
import type { ConnectorService } from "./service.js";

/**
 * Connector health (docs/seed-api.md "D. Connector health", docs/compat.md 6.1): `GET|HEAD
 * /api/connector-health` and `/api/connector-health/<id>`. Privileges (docs/seed-api.md
 * "Authentication", row D): a System key with the `connector-health` scope; users and Anonymous
 * need Feeds_Manage (granted globally: connectors belong to no feed).
 */

const TAGS = ["connector-health"];
export const CONNECTOR_HEALTH_NEED: AccessNeed = { api: "connector-health", attribute: "Feeds_Manage" };
const errors = { 401: errorText, 403: errorText } as const;

/** Ids are positive integers as SQLite assigns them; anything else names no connector. */
const ID = /^[1-9]\d{0,15}$/;

export const connectorHealthRoutes: FastifyPluginAsync<{ connectors: ConnectorService }> = async (
  app,
  { connectors },
) => {
  const api = app.withTypeProvider<ZodTypeProvider>();

  api.route({
    method: "GET",
    url: "/api/connector-health",
    schema: {
      summary: "Health of every connector",
      description: "An array of Connector health objects, ordered by name. HEAD is answered too.",
      tags: TAGS,
      response: { 200: z.array(connectorHealthSchema), ...errors },
    },
    config: { access: { need: CONNECTOR_HEALTH_NEED } },
    handler: async (_request, reply) => {
      const all = await connectors.listConnectors();
      return reply.code(200).send(all.map((connector) => connectors.presentHealth(connector)));
    },
  });

  api.route({
    method: "GET",
    url: "/api/connector-health/:id",
    schema: {
      summary: "Health of one connector",
      description:
        "By numeric id (as listed by /api/connector-health); an unknown or non-numeric id answers 404. " +
        "HEAD is answered too.",
      tags: TAGS,
      params: connectorIdParams,
      response: { 200: connectorHealthSchema, ...errors, 404: errorText },
    },
    config: { access: { need: CONNECTOR_HEALTH_NEED } },
    handler: async (request, reply) => {
      const { id } = request.params;
      const connector = ID.test(id) ? await connectors.findConnectorById(Number(id)) : undefined;
      if (!connector) throw notFound("CONNECTOR_NOT_FOUND", "No connector has this id.");
      return reply.code(200).send(connectors.presentHealth(connector));
    },
  });
};
