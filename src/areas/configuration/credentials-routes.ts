import type { FastifyBaseLogger, FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { errorText } from "../../http/errors.js";
import { requireJsonBody } from "../../http/json-reply.js";
import { param } from "../../http/params.js";
import { queryDoc } from "../../http/query-doc.js";
import { CREDENTIAL_KINDS } from "./credentials-repository.js";
import type { CredentialInput, CredentialsService } from "./credentials-service.js";

/**
 * `/api/infrastructure/credentials/<list|create|update|delete>[/<name>]`, in the style of the
 * other infrastructure entities (docs/compat.md 8.2): what `ssh` servers log in with. A body
 * carries `userName` and the secret (`privateKey` or `password`); no answer ever carries the
 * secret: the response schema has no field for it, so even a mistake upstream could not send it.
 */
const TAGS = ["infrastructure"];
const VIEW = { access: { need: { api: "infrastructure", attribute: "Infrastructure_View" } } } as const;
const MANAGE = { access: { need: { api: "infrastructure", attribute: "Infrastructure_Manage" } } } as const;
const errors = { 400: errorText, 403: errorText, 404: errorText, 409: errorText, 415: errorText, 422: errorText };

const credentialSchema = z.object({
  name: z.string(),
  kind: z.enum(CREDENTIAL_KINDS),
  userName: z.string(),
  createdAt: z.string(),
  modifiedAt: z.string(),
});
const body = z
  .looseObject({
    name: z.string().optional(),
    kind: z.string().optional(),
    userName: z.string().optional(),
    privateKey: z.string().optional(),
    password: z.string().optional(),
  })
  .nullish();
const nameParam = z.object({ name: z.string() });

function inputOf(input: z.infer<typeof body>): CredentialInput {
  if (!input) return {};
  return {
    name: input.name,
    kind: input.kind,
    userName: input.userName,
    privateKey: input.privateKey,
    password: input.password,
  };
}

export const credentialsRoutes: FastifyPluginAsync<{ credentials: CredentialsService }> = async (
  app,
  { credentials },
) => {
  await resealAtStart(app.log, credentials);
  const api = app.withTypeProvider<ZodTypeProvider>();
  const base = "/api/infrastructure/credentials";

  api.route({
    method: ["GET", "POST"],
    url: `${base}/list`,
    schema: {
      summary: "List stored credentials (never their secrets)",
      tags: TAGS,
      querystring: queryDoc({ name: "Only this credential" }),
      response: { 200: z.array(credentialSchema), ...errors },
    },
    config: VIEW,
    handler: async (request) => credentials.list(param(request.query as Record<string, unknown>, "name")),
  });
  api.post(`${base}/create/:name`, {
    schema: {
      summary: "Store a credential: userName and privateKey (kind ssh-key) or password (ssh-password)",
      tags: TAGS,
      params: nameParam,
      body,
      response: { 201: credentialSchema, ...errors },
    },
    config: MANAGE,
    preValidation: requireJsonBody,
    handler: async (request, reply) =>
      reply
        .code(201)
        .header("Cache-Control", "no-store")
        .send(await credentials.create(request.params.name, inputOf(request.body))),
  });
  api.post(`${base}/update/:name`, {
    schema: {
      summary: "Change a credential (a new secret replaces the old one)",
      tags: TAGS,
      params: nameParam,
      body,
      response: { 200: credentialSchema, ...errors },
    },
    config: MANAGE,
    preValidation: requireJsonBody,
    handler: async (request, reply) =>
      reply
        .header("Cache-Control", "no-store")
        .send(await credentials.update(request.params.name, inputOf(request.body))),
  });
  api.route({
    method: ["POST", "DELETE"],
    url: `${base}/delete/:name`,
    schema: {
      summary: "Delete a credential (409 while a server uses it)",
      tags: TAGS,
      params: nameParam,
      response: { 200: z.string(), ...errors },
    },
    config: MANAGE,
    handler: async (request, reply) => {
      await credentials.delete(request.params.name);
      return reply.type("text/plain").send("");
    },
  });
};

/**
 * Secrets sealed under a previous secret key (WHARF_SECRET_KEY_PREVIOUS) are sealed under the
 * current one before anything is served, as connector passwords are. One no key opens is left as
 * it is (the right key given later still recovers it) and reported by name, never by content.
 */
async function resealAtStart(log: FastifyBaseLogger, credentials: CredentialsService): Promise<void> {
  try {
    const { resealed, unreadable } = await credentials.resealSecrets();
    if (resealed > 0) log.info({ resealed }, "stored credentials encrypted with the current secret key");
    for (const { credential, reason } of unreadable) {
      log.warn({ credential }, `the secret of credential '${credential}' cannot be decrypted: ${reason}`);
    }
  } catch (error) {
    log.warn({ err: error }, "stored credentials were not re-encrypted; they will be at the next start");
  }
}
