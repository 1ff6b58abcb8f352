import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import fs from "node:fs/promises";
import { Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import { DomainError, invalid } from "../domain/errors.js";
import { type UpackManifest, validateManifest } from "../domain/upack-manifest.js";
import { formatVersion } from "../domain/upack-version.js";
import { openZip } from "../storage/zip.js";
import { type CommandIo, type CommandLine, type Print, runCommand, UsageError } from "./command.js";
import { createProgress, formatBytes, type ProgressOutput } from "./progress.js";
import { type Answer, type Request, send } from "./push-http.js";

/**
 * `wharf push <file> <feed-url>`: uploads a .upack to a universal feed of Wharf or ProGet the way
 * the upack CLI does (docs/clients.md 3.2: manifest checked locally, then `PUT <feed-url>/upload`,
 * application/zip), streaming from disk. A version the feed already has is never replaced
 * silently: the server replaces one for a key that may overwrite (README "Universal packages"),
 * so push asks the feed first and refuses unless --overwrite is given.
 */

export const PUSH_USAGE = `Usage:
  wharf push <file.upack> <feed-url> [--api-key <key> | --user <name:password>] [--overwrite]

Uploads a universal package to a feed, e.g. http://localhost:8624/upack/internal (Wharf or ProGet).

Options:
  --api-key <key>         API key, sent as X-ApiKey (default: the WHARF_API_KEY environment variable)
  --user <name:password>  HTTP Basic credentials instead of a key
  --overwrite             replace the version if the feed has it (the key needs the overwrite/delete
                          permission); without it, a version the feed has with other contents is
                          refused, and one with the same contents is left as it is

A progress bar is drawn on standard error when it is a terminal; the result is one line on
standard output.`;

const OPTIONS = {
  "api-key": { type: "string" },
  user: { type: "string" },
  overwrite: { type: "boolean" },
} as const;

export interface PushCommandContext extends CommandIo {
  /** Notes go here, apart from the result line on `out`. */
  readonly err: Print;
  /** The environment, for WHARF_API_KEY. */
  readonly env: NodeJS.ProcessEnv;
  /** Where the progress bar goes (standard error). */
  readonly progressOutput: ProgressOutput;
}

/** upack.json is small; a larger one is not a package anybody made on purpose. */
const MAX_MANIFEST_BYTES = 1024 * 1024;

/** Runs `wharf push`; needs no database. Exit code 0 pushed (or already there), 1 refused or failed, 2 bad arguments. */
export function pushCommand(args: string[], ctx: PushCommandContext): Promise<number> {
  return runCommand({ usage: PUSH_USAGE, options: OPTIONS }, args, ctx, run);
}

async function run({ values, positionals }: CommandLine<typeof OPTIONS>, ctx: PushCommandContext): Promise<number> {
  const [file, feedText, ...extra] = positionals;
  if (file === undefined || feedText === undefined)
    throw new UsageError("the package file and the feed URL are required");
  if (extra.length > 0) throw new UsageError(`unexpected argument '${extra[0]}'`);
  const feed = parseFeedUrl(feedText);
  const auth = authHeaders(values["api-key"] ?? nonEmpty(ctx.env.WHARF_API_KEY), values.user);
  const size = await fileSize(file);
  const manifest = await readManifest(file);
  const version = formatVersion(manifest.version);
  const id = `${manifest.group === "" ? "" : `${manifest.group}/`}${manifest.name} ${version}`;
  const overwrite = values.overwrite === true;

  const existing = await findVersion(feed, manifest, auth);
  if (existing.found) {
    const local = await sha1Of(file);
    if (existing.sha1 === local) {
      ctx.out(`${id} is already in ${feed.href} with the same contents (sha1 ${local}); nothing sent.`);
      return 0;
    }
    if (!overwrite) {
      throw new DomainError(
        "conflict",
        "PUSH_VERSION_EXISTS",
        `${id} is already in ${feed.href} with other contents (sha1 ${existing.sha1 ?? "unknown"}, ` +
          `this file ${local}). Nothing was sent: give the package a new version, or pass --overwrite ` +
          `to replace it (the key then needs the overwrite/delete permission).`,
      );
    }
  }

  const started = Date.now();
  const progress = createProgress(ctx.progressOutput, size, `${manifest.name} ${version}`);
  const hash = createHash("sha1");
  let sent = 0;
  const counted = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      hash.update(chunk);
      sent += chunk.length;
      progress.update(sent);
      done(null, chunk);
    },
  });
  const body = createReadStream(file);
  body.on("error", (error) => counted.destroy(error));
  body.pipe(counted);
  const upload = { method: "PUT", url: new URL(`${feed.href}/upload`), headers: auth } as const;
  let answer: Answer;
  try {
    answer = await send({
      ...upload,
      headers: { ...auth, "Content-Type": "application/zip", "Content-Length": String(size) },
      body: counted,
    }).catch(async (error: unknown) => {
      throw (await refusalBeforeBody(upload, error)) ?? error;
    });
  } finally {
    progress.finish();
    body.destroy();
  }
  if (answer.status < 200 || answer.status > 299) throw refusal("upload", answer);

  const result = parseJson(answer.text);
  const local = hash.digest("hex");
  if (sent === size && typeof result?.sha1 === "string" && result.sha1.toLowerCase() !== local) {
    throw invalid(
      "PUSH_DIGEST_MISMATCH",
      `The feed stored ${id} with sha1 ${result.sha1}, but the file's is ${local}.`,
    );
  }
  const seconds = (Date.now() - started) / 1000;
  ctx.out(
    `Pushed ${id} to ${feed.href} (${formatBytes(size)} in ${seconds.toFixed(1)} s, ${formatBytes(size / Math.max(seconds, 0.001))}/s).`,
  );
  if (result?.replaced === true && !overwrite) {
    // Another upload got there between the check and this one, or the key could not view the feed.
    throw new DomainError(
      "conflict",
      "PUSH_REPLACED",
      `The feed replaced an existing ${id} (it was uploaded meanwhile, or the key cannot view the feed to check first).`,
    );
  }
  if (result?.replaced === true) ctx.err(`note: replaced the version the feed had.`);
  // A server that does not say (ProGet) may have replaced one that the key could not see.
  if (result?.replaced === undefined && !existing.found && existing.unchecked !== undefined) {
    ctx.err(`note: could not check whether the feed had ${id} before (${existing.unchecked}).`);
  }
  return 0;
}

/**
 * A server refuses an upload before reading it (wrong key, no such feed) and closes the connection;
 * the answer is then often lost under the reset of the body still in flight. An empty request asks
 * again, and its answer is the reason when it is one that does not depend on the body.
 */
async function refusalBeforeBody(upload: Pick<Request, "method" | "url" | "headers">, error: unknown) {
  if (!(error instanceof DomainError) || error.code !== "PUSH_SERVER_UNREACHABLE") return undefined;
  const probe = await send({ ...upload, headers: { ...upload.headers, "Content-Length": "0" } }).catch(() => undefined);
  return probe && [401, 403, 404].includes(probe.status) ? refusal("upload", probe) : undefined;
}

/** `http(s)://host[:port]/<path>` without a trailing slash, query or credentials. */
function parseFeedUrl(text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new UsageError(`'${text}' is not a URL; give the feed's URL, e.g. http://localhost:8624/upack/<feed>`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new UsageError(`the feed URL must be http or https`);
  if (url.username !== "" || url.password !== "") {
    throw new UsageError("put credentials in --user or --api-key, not in the URL (it is printed)");
  }
  if (url.search !== "" || url.hash !== "") throw new UsageError("the feed URL takes no query string");
  url.pathname = url.pathname.replace(/\/+$/, "");
  return new URL(url.href.replace(/\/+$/, ""));
}

function authHeaders(apiKey: string | undefined, user: string | undefined): Record<string, string> {
  if (apiKey !== undefined && user !== undefined)
    throw new UsageError("give either --api-key (or WHARF_API_KEY) or --user");
  if (apiKey !== undefined) return { "X-ApiKey": apiKey };
  if (user === undefined) return {};
  if (!user.includes(":")) throw new UsageError("--user takes <name>:<password> (or api:<key>)");
  return { Authorization: `Basic ${Buffer.from(user, "utf8").toString("base64")}` };
}

const nonEmpty = (value: string | undefined) => (value === "" ? undefined : value);

async function fileSize(file: string): Promise<number> {
  try {
    const stats = await fs.stat(file);
    if (!stats.isFile()) throw invalid("PUSH_NOT_A_FILE", `${file} is not a file.`);
    return stats.size;
  } catch (error) {
    if (error instanceof DomainError) throw error;
    throw invalid(
      "PUSH_FILE_NOT_FOUND",
      `Cannot read ${file}: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
}

/** The package's upack.json, held to the server's rules before anything is sent (as upack push does). */
async function readManifest(file: string): Promise<UpackManifest> {
  const zip = await openZip(file);
  try {
    if (zip.findEntry("upack.json") === undefined) {
      throw invalid("PUSH_NOT_A_PACKAGE", `${file} is not a universal package: it has no upack.json.`);
    }
    const text = await zip.readText("upack.json", MAX_MANIFEST_BYTES);
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw invalid("PUSH_NOT_A_PACKAGE", `${file}: upack.json is not JSON.`);
    }
    return validateManifest(json, { label: `${file}: upack.json` });
  } finally {
    await zip.close();
  }
}

type Lookup =
  { readonly found: true; readonly sha1: string | undefined } | { readonly found: false; readonly unchecked?: string };

/** Asks the feed for this exact version (docs/seed-api.md A, list versions with `version`: one object, or 404). */
async function findVersion(feed: URL, manifest: UpackManifest, auth: Record<string, string>): Promise<Lookup> {
  const url = new URL(`${feed.href}/versions`);
  if (manifest.group !== "") url.searchParams.set("group", manifest.group);
  url.searchParams.set("name", manifest.name);
  url.searchParams.set("version", formatVersion(manifest.version));
  const answer = await send({ method: "GET", url, headers: { ...auth, Accept: "application/json" } });
  if (answer.status === 404) return { found: false };
  // Some keys may upload without viewing the feed: the server's answer to the upload then decides.
  if (answer.status === 401 || answer.status === 403) {
    return { found: false, unchecked: `the feed answered ${answer.status} to viewing it` };
  }
  if (answer.status !== 200) throw refusal("version lookup", answer);
  const json = parseJson(answer.text);
  return { found: true, sha1: typeof json?.sha1 === "string" ? json.sha1.toLowerCase() : undefined };
}

async function sha1Of(file: string): Promise<string> {
  const hash = createHash("sha1");
  await pipeline(createReadStream(file), hash);
  return hash.digest("hex");
}

function parseJson(text: string): Record<string, unknown> | undefined {
  try {
    const json: unknown = JSON.parse(text);
    return typeof json === "object" && json !== null && !Array.isArray(json)
      ? (json as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

const HINTS: Readonly<Record<number, string>> = {
  401: "give a key with --api-key or WHARF_API_KEY, or --user",
  403: "the key is unknown, or may not upload to this feed (a feed key needs the 'add' permission)",
  404: "check the feed URL: http(s)://<host>/upack/<feed>",
  409: "the feed has this version; give the package a new version",
  413: "the package is larger than the server accepts (WHARF_MAX_UPLOAD_BYTES on Wharf)",
};

/** The server's own message, with its status and what to do about it. */
function refusal(step: string, answer: Answer): DomainError {
  const message = answer.text.trim().slice(0, 2000) || "(no message)";
  const hint = HINTS[answer.status];
  return new DomainError(
    "invalid",
    "PUSH_REFUSED",
    `The feed refused the ${step}: ${answer.status} ${answer.statusText}: ${message}${hint ? `\nhint: ${hint}` : ""}`,
  );
}
