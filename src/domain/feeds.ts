import { invalid } from "./errors.js";

export const MAX_FEED_NAME_LENGTH = 100;

// RFC 3986 unreserved characters: the name goes into URLs (/upack/<feed>/...) unescaped (docs/compat.md 5.2).
const FEED_NAME_CHARACTERS = /^[A-Za-z0-9._~-]+$/;

/** Returns the name unchanged when valid; throws invalid naming the problem otherwise. */
export function validateFeedName(name: unknown): string {
  if (name === undefined || name === null || (typeof name === "string" && name.trim() === "")) {
    // Exact wording from the old feed-management docs (docs/compat.md 5.1).
    throw invalid("FEED_NAME_REQUIRED", "feed name is required");
  }
  if (typeof name !== "string") throw invalid("INVALID_FEED_NAME", "feed name must be a string");
  if (name.length > MAX_FEED_NAME_LENGTH) {
    throw invalid("INVALID_FEED_NAME", `feed name must be at most ${MAX_FEED_NAME_LENGTH} characters`);
  }
  if (name === "." || name === "..") {
    // Unreserved, but URL normalisation turns them into path navigation.
    throw invalid("INVALID_FEED_NAME", `feed name cannot be '${name}'`);
  }
  if (!FEED_NAME_CHARACTERS.test(name)) {
    throw invalid("INVALID_FEED_NAME", `feed name '${name}' may contain only letters, digits, '-', '.', '_' and '~'`);
  }
  return name;
}

/** Feed type names as ProGet spells them in output (docs/compat.md 5.2). */
export const FEED_TYPES = [
  "universal",
  "romp",
  "nuget",
  "chocolatey",
  "powershell",
  "npm",
  "bower",
  "maven",
  "docker",
  "rubygems",
  "vsix",
  "asset",
  "debian",
  "pypi",
  "helm",
  "rpm",
  "conda",
  "cran",
  "apk",
  "cargo",
  "pub",
  "terraform",
  "composer",
  "conan",
] as const;

export type FeedType = (typeof FEED_TYPES)[number];

const FEED_TYPE_BY_LOWER_NAME: ReadonlyMap<string, FeedType> = new Map<string, FeedType>([
  ...FEED_TYPES.map((type): [string, FeedType] => [type, type]),
  // Older name of universal feeds, still in old native data and the Jenkins mock (docs/compat.md 5.2).
  ["proget", "universal"],
]);

// A real client test looks for this phrase in the 400 body; keep it verbatim.
const FEED_TYPE_REQUIRED = "a valid feed type is required";

/** Case-insensitive (pgutil sends `NuGet`, `Universal`); returns the canonical lowercase name. */
export function normalizeFeedType(input: unknown): FeedType {
  if (typeof input !== "string" || input.trim() === "") {
    throw invalid("INVALID_FEED_TYPE", FEED_TYPE_REQUIRED);
  }
  const type = FEED_TYPE_BY_LOWER_NAME.get(input.trim().toLowerCase());
  if (type === undefined) {
    const shown = input.length > 50 ? `${input.slice(0, 50)}...` : input;
    throw invalid("INVALID_FEED_TYPE", `${FEED_TYPE_REQUIRED}; '${shown}' is not a known feed type`);
  }
  return type;
}

/**
 * The types Wharf serves: universal packages (romp is the same format) at `/upack/<feed>`, asset
 * directories at `/endpoints/<dir>`. The other names stay known, for the type-change rules and for
 * feeds an older Wharf created, which still list, read and delete; none can be created or reached
 * by a type change (issue 12), so that no feed gets an `endpointUrl` that answers 404.
 */
export const SERVED_FEED_TYPES = ["universal", "romp", "asset"] as const satisfies readonly FeedType[];

export function isServedFeedType(type: FeedType): boolean {
  return (SERVED_FEED_TYPES as readonly FeedType[]).includes(type);
}

/** Lists the served types for messages and help: what to send instead. */
export const SERVED_FEED_TYPES_TEXT =
  "universal (universal packages; also romp, or ProGet, its old name) and asset (asset directories)";

/** A type a feed is created with or changed to: known (400 otherwise) and served (400 listing the served ones). */
export function normalizeServedFeedType(input: unknown): FeedType {
  return requireServedFeedType(normalizeFeedType(input));
}

/** Returns the type when served; throws invalid FEED_TYPE_NOT_SERVED listing the served types otherwise. */
export function requireServedFeedType(type: FeedType): FeedType {
  if (!isServedFeedType(type)) {
    throw invalid(
      "FEED_TYPE_NOT_SERVED",
      `feed type '${type}' is not served by Wharf; the served feed types are ${SERVED_FEED_TYPES_TEXT}`,
    );
  }
  return type;
}

// Families that share a package format, so existing packages stay readable after a change.
const CHANGEABLE_FAMILIES: readonly (readonly FeedType[])[] = [
  ["universal", "romp"],
  ["nuget", "chocolatey", "powershell"],
];

/** Feed type changes are allowed only within a family (docs/compat.md 5.1); callers answer 400 otherwise. */
export function canChangeFeedType(from: FeedType, to: FeedType): boolean {
  return from === to || CHANGEABLE_FAMILIES.some((family) => family.includes(from) && family.includes(to));
}
