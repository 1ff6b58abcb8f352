import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { MANAGE_CONNECTORS } from "../../domain/principal.js";
import { requireJsonBody, sendJson, wantsIndent } from "../../http/json-reply.js";
import { errorText, managementQuery } from "../management/schemas.js";
import { connectorHealthSchema, connectorInputSchema, connectorNameParams, connectorSchema } from "./schemas.js";
import type { ConnectorService } from "./service.js";

/**
 * Connector management (docs/compat.md 5.3): `/api/management/connectors/...`, with the methods,
 * statuses, `indent` and plain-text errors of feed management (docs/compat.md 5.1), and delete by POST
 * as well as DELETE (docs/compat.md 11: pgutil posts). Reading and changing both need Admin_ManageFeed
 * (System keys: the `feeds` scope): a connector names an upstream and the account used there,
 * which a server that lets anonymous users view its feeds must not show them. Connectors belong to
 * no feed, so only global grants count, and Feed keys are always refused.
 */

const PREFIX = "/api/management/connectors";
const TAGS = ["connectors"];

/** For reading as well as changing: a connector shows an upstream's URL and account (see above). */
const adminNeed = MANAGE_CONNECTORS;

const errors = { 400: errorText, 401: errorText, 403: errorText, 404: errorText } as const;

export const connectorRoutes: FastifyPluginAsync<{ connectors: ConnectorService }> = async (app, { connectors }) => {
  const api = app.withTypeProvider<ZodTypeProvider>();

  api.route({
    method: ["POST", "PUT"],
    url: `${PREFIX}/create`,
    schema: {
      summary: "Create a connector",
      description:
        "Body: a Connector; `name`, `url` and `feedType` are required. Answers 201 with the connector, " +
        "never with its password. Only universal connectors (`ProGet` is their old name) serve packages " +
        "yet; connectors of other types are stored only.",
      tags: TAGS,
      querystring: managementQuery,
      body: connectorInputSchema.nullish(),
      response: { 201: connectorSchema, ...errors, 409: errorText, 415: errorText },
    },
    config: { access: { need: adminNeed } },
    preValidation: requireJsonBody,
    handler: async (request, reply) => {
      const connector = await connectors.createConnector(request.body ?? {});
      return sendJson(reply, 201, connectorSchema, connectors.present(connector), wantsIndent(request.query));
    },
  });

  api.route({
    method: ["GET", "POST"],
    url: `${PREFIX}/get/:name`,
    schema: {
      summary: "Get a connector",
      description: "By name, case-insensitively. The password is never returned. HEAD is answered too.",
      tags: TAGS,
      params: connectorNameParams,
      querystring: managementQuery,
      response: { 200: connectorSchema, ...errors },
    },
    config: { access: { need: adminNeed } },
    handler: async (request, reply) => {
      const connector = await connectors.getConnector(request.params.name);
      return sendJson(reply, 200, connectorSchema, connectors.present(connector), wantsIndent(request.query));
    },
  });

  api.route({
    method: "GET",
    url: `${PREFIX}/list`,
    schema: {
      summary: "List connectors",
      description:
        "Ordered by name. Like the feed list, a caller who may not view feeds gets [] rather than an error. " +
        "HEAD is answered too.",
      tags: TAGS,
      querystring: managementQuery,
      response: { 200: z.array(connectorSchema), 401: errorText, 403: errorText },
    },
    config: { access: { inHandler: true } },
    handler: async (request, reply) => {
      const visible = (await request.can(adminNeed)) ? await connectors.listConnectors() : [];
      const body = visible.map((connector) => connectors.present(connector));
      return sendJson(reply, 200, z.array(connectorSchema), body, wantsIndent(request.query));
    },
  });

  api.route({
    method: ["POST", "PATCH"],
    url: `${PREFIX}/update/:name`,
    schema: {
      summary: "Update a connector (partial)",
      description:
        "Omitted or null members keep their value, except username and password (null or '' removes); " +
        "`filters` is replaced wholesale; a different `name` renames the connector, and feeds using it keep " +
        "it. Changing url, feedType or credentials resets health to unknown.",
      tags: TAGS,
      params: connectorNameParams,
      querystring: managementQuery,
      body: connectorInputSchema.nullish(),
      response: { 200: connectorSchema, ...errors, 409: errorText, 415: errorText },
    },
    config: { access: { need: adminNeed } },
    preValidation: requireJsonBody,
    handler: async (request, reply) => {
      const connector = await connectors.updateConnector(request.params.name, request.body ?? {});
      return sendJson(reply, 200, connectorSchema, connectors.present(connector), wantsIndent(request.query));
    },
  });

  api.route({
    method: ["DELETE", "POST"],
    url: `${PREFIX}/delete/:name`,
    schema: {
      summary: "Delete a connector",
      description:
        "Answers 200 with an empty body; 409 naming the feeds while feeds use the connector (remove it " +
        "from their `connectors` first). Its cached metadata goes with it.",
      tags: TAGS,
      params: connectorNameParams,
      querystring: managementQuery,
      response: { 200: z.void().describe("Empty body"), ...errors, 409: errorText },
    },
    config: { access: { need: adminNeed } },
    handler: async (request, reply) => {
      await connectors.deleteConnector(request.params.name);
      return reply.code(200).send();
    },
  });

  api.route({
    method: "POST",
    url: `${PREFIX}/check/:name`,
    schema: {
      summary: "Check a connector's health now (Wharf extension)",
      description:
        "Fetches the upstream as the scheduled check does and answers 200 with the Connector health " +
        "object (docs/seed-api.md area D), whatever the upstream's state.",
      tags: TAGS,
      params: connectorNameParams,
      querystring: managementQuery,
      response: { 200: connectorHealthSchema, ...errors },
    },
    config: { access: { need: adminNeed } },
    handler: async (request, reply) => {
      const connector = await connectors.checkHealth(request.params.name);
      return sendJson(
        reply,
        200,
        connectorHealthSchema,
        connectors.presentHealth(connector),
        wantsIndent(request.query),
      );
    },
  });
};
