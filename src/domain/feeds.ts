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

// Families that share a package format, so existing packages stay readable after a change.
const CHANGEABLE_FAMILIES: readonly (readonly FeedType[])[] = [
  ["universal", "romp"],
  ["nuget", "chocolatey", "powershell"],
];

/** Feed type changes are allowed only within a family (docs/compat.md 5.1); callers answer 400 otherwise. */
export function canChangeFeedType(from: FeedType, to: FeedType): boolean {
  return from === to || CHANGEABLE_FAMILIES.some((family) => family.includes(from) && family.includes(to));
}
