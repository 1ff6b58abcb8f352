import { gzipSync } from "node:zlib";
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import { forbidden, invalid } from "../../domain/errors.js";
import { publicBaseUrl } from "../../http/base-url.js";
import { queryDoc } from "../../http/query-doc.js";
import { evaluatePreconditions } from "../../http/send-blob.js";
import type { Config } from "../../config.js";
import type { ReleaseService } from "../releases/index.js";
import { type Inputs, readInputs } from "../releases/params.js";
import { BADGE_STATES, type BadgeState, badgeEtag, renderBadge } from "./badge-svg.js";
import { badgeStateOf, filterKey, type SelectedBuild, selectBuild } from "./build-selection.js";
import { VersionedCache } from "../../storage/change-watch.js";
import type { CacheVersion } from "../../storage/metadata-db.js";
import { errorText } from "../../http/errors.js";

/**
 * CI badges (docs/seed-api.md area G; docs/compat.md 7.6): `image` answers the SVG of the selected build's
 * latest execution, `link` redirects to the page about it. Arguments come from the query string
 * (what README embeds use) or a form body; the key as `key` or `API_Key` in either, a header or
 * Basic. A System key needs the `ci-badges` scope, a user Applications_View; anything else is 403.
 */
export interface CiBadgeOptions {
  readonly releases: ReleaseService;
  readonly config: Config;
  /** Badge states are remembered until the database changes (any write; in cluster mode, on any node). */
  readonly watch: CacheVersion;
}

/** Distinct filter sets remembered: README badges are a handful of URLs requested again and again. */
const MAX_REMEMBERED_BADGES = 4_096;

const TAGS = ["ci badges"];
const FILTERS_DOC = {
  $ApplicationName: "Application name",
  $ApplicationId: "Application id",
  $ReleaseNumber: "Release number",
  $BuildNumber: "Build number",
  "$<Variable>": "Any build variable, e.g. `$Branch=main`",
};
/** Badges change when builds do: caches may keep one briefly, then must ask again (ETag makes that cheap). */
const BADGE_CACHE_CONTROL = "public, max-age=30";
const PAGES = ["build", "release", "application", "execution"] as const;

/** The six badges, rendered once: plain and gzipped bodies with a validator each. */
const BADGES = new Map(
  BADGE_STATES.map((state) => {
    const svg = renderBadge(state);
    const etag = badgeEtag(svg);
    return [state, { svg, etag, gzip: gzipSync(svg), gzipEtag: `${etag.slice(0, -1)}-gzip"` }] as const;
  }),
);

async function authorizeBadges(request: FastifyRequest): Promise<void> {
  if (!(await request.can({ api: "ci-badges", attribute: "Applications_View" }))) throw forbidden();
}

/** The `q` of one Accept-Encoding element's parameters; 1 when absent or unreadable. */
function qualityOf(params: readonly string[]): number {
  for (const param of params) {
    const m = /^q\s*=\s*(\d+(?:\.\d*)?)$/i.exec(param);
    if (m) return Number(m[1]);
  }
  return 1;
}

/**
 * RFC 9110 12.5.3: gzip (or its alias `x-gzip`) is acceptable when listed with q > 0, or, when not
 * listed, when `*` is; q=0 means "not acceptable", so `gzip;q=0` must get the plain SVG.
 */
function acceptsGzip(header: string | readonly string[] | undefined): boolean {
  if (header === undefined) return false;
  let gzip: number | undefined;
  let any: number | undefined;
  for (const element of (typeof header === "string" ? header : header.join(",")).split(",")) {
    const [coding = "", ...params] = element.split(";").map((part) => part.trim());
    const name = coding.toLowerCase();
    if (name === "gzip" || name === "x-gzip") gzip = Math.max(gzip ?? 0, qualityOf(params));
    else if (name === "*") any = qualityOf(params);
  }
  return (gzip ?? any ?? 0) > 0;
}

function sendBadge(request: FastifyRequest, reply: FastifyReply, state: BadgeState): FastifyReply {
  const badge = BADGES.get(state);
  if (badge === undefined) throw new Error(`no badge for state ${state}`);
  const gzip = acceptsGzip(request.headers["accept-encoding"]);
  const etag = gzip ? badge.gzipEtag : badge.etag;
  reply
    .header("Cache-Control", BADGE_CACHE_CONTROL)
    .header("ETag", etag)
    .header("Vary", "Accept-Encoding")
    .header("X-Content-Type-Options", "nosniff");
  const ifNoneMatch = request.headers["if-none-match"];
  // A POST only carries the filters as a form: it reads like a GET, so it gets a 304 too, not a 412.
  const method = request.method === "HEAD" ? "HEAD" : "GET";
  if (
    ifNoneMatch !== undefined &&
    evaluatePreconditions(method, { ifNoneMatch }, { etag: etag.slice(1, -1), lastModified: undefined }) ===
      "not-modified"
  ) {
    return reply.code(304).send();
  }
  reply.type("image/svg+xml");
  if (gzip) reply.header("Content-Encoding", "gzip");
  return reply.code(200).send(gzip ? badge.gzip : badge.svg);
}

/** Where `page` shows the selected build (docs/compat.md 7.6); the JSON views of view-routes.ts answer there. */
function pagePath(page: (typeof PAGES)[number], selected: SelectedBuild): string {
  const { build, deployment } = selected;
  const application = `/applications/${build.applicationId}`;
  switch (page) {
    case "application":
      return application;
    case "release":
      if (build.releaseNumber === undefined) throw invalid("NO_RELEASE", "The selected build belongs to no release.");
      return `${application}/releases/${encodeURIComponent(build.releaseNumber)}`;
    case "build":
      return `${application}/builds/${build.id}`;
    case "execution":
      if (deployment === undefined) throw invalid("NO_EXECUTION", "The selected build has not been deployed yet.");
      return `${application}/executions/${deployment.id}`;
  }
}

export const ciBadgeRoutes: FastifyPluginAsync<CiBadgeOptions> = async (app, { releases, config, watch }) => {
  // A filter that matches only old builds, or none, walks all of an application's builds
  // (~25 ms at 10,000: bench/ci-badges-scenarios.ts); the answer holds until something is written.
  const states = new VersionedCache<string, BadgeState>(MAX_REMEMBERED_BADGES);
  async function badgeState(inputs: Inputs): Promise<BadgeState> {
    const version = watch.version();
    const key = filterKey(inputs);
    const hit = states.get(key, version);
    if (hit !== undefined) return hit;
    const state = badgeStateOf(await selectBuild(releases, inputs));
    states.set(key, version, state);
    return state;
  }

  app.route({
    method: ["GET", "HEAD", "POST"],
    url: "/api/ci-badges/image",
    schema: {
      summary: "CI badge image",
      description:
        "An SVG badge (success, pending, running, warning, error or unknown) for the latest execution of the newest " +
        "build matching every `$` filter; `unknown` when none matches. gzip when accepted; short max-age and ETag.",
      tags: TAGS,
      querystring: queryDoc(FILTERS_DOC),
      response: { 200: z.unknown().describe("image/svg+xml"), 400: errorText, 403: errorText },
    },
    config: { access: { inHandler: true } },
    handler: async (request, reply) => {
      await authorizeBadges(request);
      return sendBadge(request, reply, await badgeState(readInputs(request)));
    },
  });

  app.route({
    method: ["GET", "HEAD", "POST"],
    url: "/api/ci-badges/link",
    schema: {
      summary: "CI badge link",
      description:
        "303 to the page of the newest build matching every `$` filter: `page` = `build` (default), `release`, " +
        "`application` or `execution`. 400 for another page or when no build matches.",
      tags: TAGS,
      querystring: queryDoc({ ...FILTERS_DOC, page: "`build` (default), `release`, `application` or `execution`" }),
      response: { 303: z.unknown(), 400: errorText, 403: errorText },
    },
    config: { access: { inHandler: true } },
    handler: async (request, reply) => {
      await authorizeBadges(request);
      const inputs = readInputs(request);
      const page = (inputs.get("page") ?? "build").toLowerCase();
      if (!(PAGES as readonly string[]).includes(page)) {
        throw invalid("INVALID_PAGE", "'page' must be build, release, application or execution.");
      }
      const selected = await selectBuild(releases, inputs);
      if (selected === undefined) throw invalid("NO_BUILD", "No build matches the filters.");
      const base = publicBaseUrl(config.baseUrl, request, config.port);
      return reply
        .code(303)
        .header("Location", base + pagePath(page as (typeof PAGES)[number], selected))
        .send();
    },
  });
};
