import type { FastifyRequest } from "fastify";
import { forbidden, invalid } from "../../domain/errors.js";
import type { Attribute } from "../../domain/attributes.js";
import type { AccessNeed } from "../../domain/principal.js";
import { type Inputs, parseWholeNumber } from "./params.js";
import type { ApplicationRef, BuildRef, ReleaseRef } from "./release-service.js";
import { errorText } from "./schemas.js";

export const TAGS = ["releases"];
/** How every `/api/releases/...` operation reads its inputs (docs/compat.md 7.1), for the API description. */
export const INPUT_NOTE =
  "Inputs in the query string and/or a form or JSON body; names case-insensitive; a name given twice is 400; " +
  "`$Name` inputs set variables. Key: X-ApiKey, key (query/form), JSON API_Key, Basic api:<key>.";

export const errors = { 400: errorText, 403: errorText, 404: errorText, 409: errorText, 422: errorText } as const;

/**
 * Area E access (docs/seed-api.md "Authentication" E; docs/compat.md 7.1, 9): a System key with the
 * `releases` scope, or a user granted the attribute. Every refusal, Anonymous included, is the
 * seed's 403 sentence: Inedo's clients show it as is.
 */
export async function authorizeReleases(request: FastifyRequest, attribute: Attribute): Promise<void> {
  if (!(await request.can(releasesNeed(attribute)))) throw forbidden();
}

/** What area E asks of a caller for `attribute` (the web UI's pages and buttons ask the same). */
export function releasesNeed(attribute: Attribute): AccessNeed {
  return { api: "releases", attribute };
}

/** docs/compat.md 7.5: "application ids may be given as names". */
export function applicationRef(inputs: Inputs): ApplicationRef {
  const idText = inputs.get("applicationId");
  const name = inputs.get("applicationName");
  const applicationId = idText !== undefined ? parseWholeNumber(idText) : undefined;
  if (applicationId !== undefined) return { applicationId };
  const named = name ?? idText;
  return named !== undefined ? { applicationName: named } : {};
}

export function releaseRef(inputs: Inputs): ReleaseRef {
  const releaseId = inputs.id("releaseId");
  const releaseNumber = inputs.get("releaseNumber");
  return {
    ...applicationRef(inputs),
    ...(releaseId !== undefined && { releaseId }),
    ...(releaseNumber !== undefined && { releaseNumber }),
  };
}

export function buildRef(inputs: Inputs): BuildRef {
  const buildId = inputs.id("buildId");
  const buildNumber = inputs.get("buildNumber");
  return {
    ...releaseRef(inputs),
    ...(buildId !== undefined && { buildId }),
    ...(buildNumber !== undefined && { buildNumber }),
  };
}

export function statusInput<T extends string>(inputs: Inputs, allowed: readonly T[]): T | undefined {
  const value = inputs.get("status")?.toLowerCase();
  if (value === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(value)) {
    throw invalid("INVALID_STATUS", `'status' must be one of: ${allowed.join(", ")}.`);
  }
  return value as T;
}

/** Filters shared by the three list endpoints; unknown names simply match nothing. */
export function commonFilter(inputs: Inputs) {
  const app = applicationRef(inputs);
  const releaseId = inputs.id("releaseId");
  const releaseNumber = inputs.get("releaseNumber");
  const releaseName = inputs.get("releaseName");
  const pipelineName = inputs.get("pipelineName");
  return {
    ...app,
    ...(releaseId !== undefined && { releaseId }),
    ...(releaseNumber !== undefined && { releaseNumber }),
    ...(releaseName !== undefined && { releaseName }),
    ...(pipelineName !== undefined && { pipelineName }),
  };
}
