import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import type { FastifyInstance } from "fastify";
import { jsonSchemaTransform } from "fastify-type-provider-zod";
import { WHARF_VERSION } from "../version.js";

/** Must run before any route is added: @fastify/swagger collects routes as they register. */
export async function registerOpenApi(app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    openapi: {
      info: { title: "Wharf", version: WHARF_VERSION, description: "Self-hosted package and delivery server." },
      components: {
        securitySchemes: {
          apiKey: { type: "apiKey", in: "header", name: "X-ApiKey" },
          basic: { type: "http", scheme: "basic" },
        },
      },
      security: [{ apiKey: [] }, { basic: [] }],
    },
    transform: jsonSchemaTransform,
  });
}

/** The description at /openapi.json and a browsable UI at /docs, both public. */
export async function registerOpenApiRoutes(app: FastifyInstance): Promise<void> {
  app.get("/openapi.json", { schema: { hide: true }, config: { access: { public: true } } }, async () => app.swagger());
  await app.register(async (docs) => {
    docs.addHook("onRoute", (route) => {
      route.config = { ...route.config, access: { public: true } };
    });
    await docs.register(swaggerUi, { routePrefix: "/docs" });
  });
}
