import type { FastifyPluginAsync } from "fastify";
import { z } from "zod";
import type { Config } from "../../config.js";
import { DomainError, forbidden, invalid, notFound } from "../../domain/errors.js";
import { publicBaseUrl } from "../../http/base-url.js";
import { actorName } from "../releases/actor.js";
import { bindArguments } from "./arguments.js";
import type { NativeRegistry, NativeServices } from "./registry.js";
import { readEnvelope, SoapCall } from "./soap-envelope.js";
import { registerSoapFaults } from "./soap-faults.js";
import { actionMethodOf, protocolOf, SOAP_MEDIA_TYPES } from "./soap-protocol.js";
import { resultEnvelope } from "./soap-response.js";
import { wsdlWriter } from "./soap-wsdl.js";

/**
 * The SOAP transport of the native API (docs/seed-api.md area H; issue 14 section 2), a reader of
 * the same registry as `/api/json/<Method>`:
 * - `GET /api/soap` (`?wsdl`, `?WSDL`): the WSDL generated from the registry (soap-wsdl.ts), public
 *   like the method list at /reference/api;
 * - `POST /api/soap`: a SOAP 1.1 (`text/xml`) or 1.2 (`application/soap+xml`) envelope calling one
 *   method, the key in its `API_Key` element (or X-ApiKey/Basic, as for JSON). The key is taken out
 *   by the auth hook like a JSON body's `API_Key` and checked by the same authenticator; then the
 *   same privilege check, bindArguments() and invoke() as the JSON transport. Faults: soap-faults.ts.
 *
 * Size: before the key is known (in the envelope) the body is bounded like every JSON or form body
 * of a sender not yet known (WHARF_PRE_AUTH_BODY_BYTES, 64 KiB by default, with its time limit and
 * shared budget: http/pre-auth-body.ts); a caller whose key is in a header may send up to
 * MAX_ENVELOPE_BYTES. A larger body is refused unread with 413.
 */
export const MAX_ENVELOPE_BYTES = 1024 * 1024;

export interface SoapRoutesOptions {
  readonly services: NativeServices;
  readonly registry: NativeRegistry;
  /** WHARF_BASE_URL and the port, for the service address in the WSDL; else the request's Host. */
  readonly config?: Pick<Config, "baseUrl" | "port">;
}

const TAGS = ["native"];

export const soapRoutes: FastifyPluginAsync<SoapRoutesOptions> = async (app, { services, registry, config }) => {
  registerSoapFaults(app);
  app.addContentTypeParser(
    [...SOAP_MEDIA_TYPES],
    { parseAs: "string", bodyLimit: MAX_ENVELOPE_BYTES },
    (request, body, done) => {
      try {
        done(null, readEnvelope(body as string, protocolOf(request)));
      } catch (error) {
        done(error as Error);
      }
    },
  );

  const wsdl = wsdlWriter(registry);
  app.route({
    method: "GET",
    url: "/api/soap",
    schema: {
      summary: "WSDL of the native API's SOAP service",
      description:
        "WSDL 1.1 (document/literal, SOAP 1.1 and 1.2 bindings) generated from the native method table: " +
        "one operation per method, the API key as first element `API_Key`, then the method's parameters.",
      tags: TAGS,
      response: { 200: z.unknown().describe("text/xml") },
    },
    config: { access: { public: true } },
    handler: async (request, reply) => {
      const base = publicBaseUrl(config?.baseUrl, request, config?.port ?? 80);
      return reply
        .code(200)
        .type("text/xml; charset=utf-8")
        .send(wsdl(`${base}/api/soap`));
    },
  });

  app.route({
    method: "POST",
    url: "/api/soap",
    bodyLimit: MAX_ENVELOPE_BYTES,
    schema: {
      summary: "Call a native API method over SOAP",
      description:
        "SOAP 1.1 (`text/xml`, `SOAPAction`) or 1.2 (`application/soap+xml`) envelope; the Body's element names " +
        "the method, `API_Key` carries the key. The answer is `<MethodResponse><MethodResult>`, or a SOAP Fault.",
      tags: TAGS,
      response: { 200: z.unknown().describe("text/xml or application/soap+xml") },
    },
    config: { access: { inHandler: true }, keyInXmlBody: true },
    handler: async (request, reply) => {
      const call = request.body;
      if (!(call instanceof SoapCall)) {
        throw new DomainError(
          "unsupported",
          "SOAP_MEDIA_TYPE",
          "Send a SOAP 1.1 envelope as text/xml or a SOAP 1.2 envelope as application/soap+xml.",
        );
      }
      const method = registry.find(call.operation);
      if (method === undefined) {
        throw notFound("UNKNOWN_NATIVE_METHOD", `The native API method '${call.operation}' does not exist.`);
      }
      const action = actionMethodOf(request);
      if (action !== undefined && action.toLowerCase() !== method.name.toLowerCase()) {
        throw invalid(
          "SOAP_ACTION_MISMATCH",
          `The SOAP action names '${action}' but the envelope calls '${call.operation}'.`,
        );
      }
      if (!(await request.can({ api: "native", attribute: method.attribute }))) throw forbidden();
      const args = bindArguments(method, call.args);
      const result = await method.invoke(args, {
        services,
        actor: actorName(request.principal),
        can: (need) => request.can(need),
      });
      const protocol = protocolOf(request);
      return reply
        .code(200)
        .type(protocol.contentType)
        .send(resultEnvelope(protocol, method, result));
    },
  });
};
