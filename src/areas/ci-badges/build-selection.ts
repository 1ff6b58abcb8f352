import { invalid } from "../../domain/errors.js";
import type { Build, BuildFilter, Deployment, ReleaseService } from "../releases/index.js";
import { type Inputs, parseWholeNumber } from "../releases/params.js";
import type { BadgeState } from "./badge-svg.js";

/**
 * The build a badge or link is about (docs/compat.md 7.6): the newest build matching every filter,
 * AND-combined. `$ApplicationName`, `$ApplicationId`, `$ReleaseNumber` and `$BuildNumber` select
 * by those fields; any other `$Name=value` matches a build variable.
 */
export interface SelectedBuild {
  readonly build: Build;
  /** Its latest deployment (the "latest execution"), if it has one. */
  readonly deployment: Deployment | undefined;
}

const FIELD_FILTERS: ReadonlyMap<string, "applicationName" | "applicationId" | "releaseNumber" | "buildNumber"> =
  new Map([
    ["applicationname", "applicationName"],
    ["applicationid", "applicationId"],
    ["releasenumber", "releaseNumber"],
    ["buildnumber", "buildNumber"],
  ] as const);

/**
 * Build-variable filters one badge may combine. Each one is a clause of the query, and SQLite
 * refuses a statement past ~1,000 of them ("Expression tree is too large", a 500); a README badge
 * names a handful, so refuse well before that with a 400 that says why.
 */
export const MAX_VARIABLE_FILTERS = 50;

function buildFilterOf(inputs: Inputs): BuildFilter {
  const filter: BuildFilter & { variables: Map<string, string> } = { variables: new Map(), limit: 1 };
  for (const [name, value] of inputs.variables) {
    const field = FIELD_FILTERS.get(name.toLowerCase());
    if (field === undefined) {
      if (filter.variables.size === MAX_VARIABLE_FILTERS) {
        throw invalid(
          "TOO_MANY_FILTERS",
          `A badge takes at most ${MAX_VARIABLE_FILTERS} build-variable filters ('$Name=value').`,
        );
      }
      filter.variables.set(name, value);
    } else if (field === "applicationId") {
      const applicationId = parseWholeNumber(value);
      if (applicationId === undefined) throw invalid("INVALID_APPLICATION_ID", "'$ApplicationId' must be a number.");
      filter.applicationId = applicationId;
    } else filter[field] = value;
  }
  return filter;
}

/** The filters as a cache key: names case-insensitive, order irrelevant. */
export function filterKey(inputs: Inputs): string {
  return JSON.stringify([...inputs.variables].map(([name, value]) => [name.toLowerCase(), value]).sort());
}

export async function selectBuild(releases: ReleaseService, inputs: Inputs): Promise<SelectedBuild | undefined> {
  const [build] = await releases.listBuilds(buildFilterOf(inputs));
  if (build === undefined) return undefined;
  return { build, deployment: await releases.latestDeploymentOf(build.id) };
}

const STATE_OF_DEPLOYMENT: Record<Deployment["status"], BadgeState> = {
  pending: "pending",
  executing: "running",
  succeeded: "success",
  warned: "warning",
  failed: "error",
};

/** No matching build, or a build never deployed: `unknown` (docs/compat.md 7.6). */
export function badgeStateOf(selected: SelectedBuild | undefined): BadgeState {
  const status = selected?.deployment?.status;
  return status === undefined ? "unknown" : STATE_OF_DEPLOYMENT[status];
}
