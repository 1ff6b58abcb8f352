/**
 * Wharf runs on Node.js 22.14 or later (README "Quick start"). Below that, better-sqlite3's
 * binary (Node-API 10) crashes the process instead of failing with a message, so the entry points
 * import this module first: it stops an unsupported Node before any native addon is loaded.
 */
export const OLDEST_SUPPORTED_NODE = "22.14.0";

/** The message for a Node.js version Wharf does not run on, or undefined when it does. */
export function unsupportedNodeMessage(version: string): string | undefined {
  const [major = 0, minor = 0] = version.replace(/^v/, "").split(".").map(Number);
  const [oldestMajor = 0, oldestMinor = 0] = OLDEST_SUPPORTED_NODE.split(".").map(Number);
  if (major > oldestMajor || (major === oldestMajor && minor >= oldestMinor)) return undefined;
  return (
    `Wharf needs Node.js ${OLDEST_SUPPORTED_NODE} or later (22 or 24, README "Quick start"); ` +
    `this is Node.js ${version.replace(/^v/, "")}. Install a supported Node.js and start again.`
  );
}

const unsupported = unsupportedNodeMessage(process.versions.node);
if (unsupported !== undefined) {
  process.stderr.write(`${unsupported}\n`);
  process.exit(1);
}
