import type { FastifyPluginAsync } from "fastify";
import type { NativeRegistry, NativeServices } from "./registry.js";
import { nativeRoutes } from "./routes.js";
import { soapRoutes, type SoapRoutesOptions } from "./soap-routes.js";

export { NATIVE_METHODS } from "./methods.js";
export { createNativeRegistry } from "./registry.js";
export type { NativeMethod, NativeParameter, NativeRegistry, NativeServices } from "./registry.js";

/**
 * Native API (docs/seed-api.md area H; docs/compat.md 7.7): one method table (registry.ts, methods.ts)
 * served over JSON at `/api/json/<Method>` and SOAP at `/api/soap`; the web UI's reference pages
 * (`/reference/api`, web-ui/reference) read the same table.
 */
export const nativeArea: FastifyPluginAsync<{
  services: NativeServices;
  /** The method table (made by app.ts, which also gives it to the web UI's reference pages). */
  registry: NativeRegistry;
  /** WHARF_BASE_URL and the port, for absolute URLs (the SOAP service address in its WSDL). */
  config?: SoapRoutesOptions["config"];
}> = async (app, { services, registry, config }) => {
  await app.register(nativeRoutes, { services, registry });
  await app.register(soapRoutes, { services, registry, ...(config && { config }) });
};
