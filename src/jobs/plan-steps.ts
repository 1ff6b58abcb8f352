/**
 * Deployment plans (issue 6 section 1): stored JSON definitions `{ "steps": [{ "type", ...args }] }`
 * run server-side by the job runner. Steps: log, warn, fail, sleep, set-variable, http (GET
 * through the fetch guard) and deploy-package (a universal package from a Wharf feed extracted
 * into a directory on the Wharf host, inside an allowed root).
 *
 * Variables: `$Name` or `${Name}` in any string argument is replaced from the run's variables
 * (release, build and request variables, merged by the caller) and those set by earlier
 * set-variable steps; names match case-insensitively, `$$` is a literal `$`. An unknown name fails
 * the step rather than passing through: `/srv/$Aplication` must not deploy to a literal directory.
 *
 * Outcome: failed at the first fail step or error (later steps do not run), else warned when
 * anything logged a warning (a warn step, an http step told to warn), else succeeded.
 */
import { randomUUID } from "node:crypto";
import { createWriteStream } from "node:fs";
import { mkdir, mkdtemp, realpath, rename, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { setTimeout as sleep } from "node:timers/promises";
import { z } from "zod";
import { DomainError, invalid } from "../domain/errors.js";
import { expandVariables } from "../domain/variables.js";
import type { GuardedFetch } from "../net/fetch-guard.js";
import { type ArchiveLimits, DEFAULT_ARCHIVE_LIMITS } from "../storage/archives.js";
import { openZip, type ZipReader } from "../storage/zip.js";
import type { JobLogLevel, JobOutcome } from "./runner.js";
import { isInside } from "../storage/path-containment.js";

/** A step holds a job slot while it sleeps; longer waits belong to scheduling, not to a plan. */
const MAX_SLEEP_SECONDS = 600;
const MAX_STEPS = 500;
const text = z.string().max(10_000);
const variableName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be a letter or _ then letters, digits or _");

/**
 * One step; the single source of truth for plan steps (the releases area validates pipeline
 * stages' inline steps and stored plans with it).
 */
const planStepSchema = z.discriminatedUnion(
  "type",
  [
    z.strictObject({ type: z.literal("log"), message: text, level: z.enum(["debug", "info"]).default("info") }),
    z.strictObject({ type: z.literal("warn"), message: text }),
    z.strictObject({ type: z.literal("fail"), message: text.optional() }),
    // A string is allowed so that the delay can come from a variable; it is checked after expansion.
    z.strictObject({
      type: z.literal("sleep"),
      seconds: z.union([z.number().min(0).max(MAX_SLEEP_SECONDS), z.string().min(1).max(100)]),
    }),
    z.strictObject({ type: z.literal("set-variable"), name: variableName, value: text }),
    z.strictObject({
      type: z.literal("http"),
      url: z.string().min(1).max(8192),
      // What a 4xx/5xx answer does to the plan.
      onErrorStatus: z.enum(["fail", "warn", "ignore"]).default("fail"),
    }),
    z.strictObject({
      type: z.literal("deploy-package"),
      feed: z.string().min(1).max(200),
      group: z.string().max(1000).default(""),
      name: z.string().min(1).max(200),
      version: z.string().min(1).max(200),
      // An absolute directory on the Wharf host, inside one of the executor's deployRoots.
      target: z.string().min(1).max(4096),
    }),
  ],
  { error: "unknown step type; expected log, warn, fail, sleep, set-variable, http or deploy-package" },
);

export const planStepsSchema = z.array(planStepSchema).max(MAX_STEPS);
const planSchema = z.strictObject({ steps: planStepsSchema });

export type PlanStep = z.infer<typeof planStepSchema>;
export type Plan = z.infer<typeof planSchema>;

/** Validates a plan definition; invalid PLAN_INVALID naming the first problems (400). */
export function parsePlan(value: unknown): Plan {
  const result = planSchema.safeParse(value);
  if (result.success) return result.data;
  const problems = result.error.issues.slice(0, 5).map((issue) => {
    const [first, index, ...rest] = issue.path;
    const where =
      first === "steps" && typeof index === "number"
        ? `step ${index + 1}${rest.length > 0 ? ` ${rest.join(".")}` : ""}`
        : issue.path.join(".") || "the plan";
    return `${where}: ${issue.message}`;
  });
  throw invalid("PLAN_INVALID", `The deployment plan is invalid: ${problems.join("; ")}.`);
}

/** parsePlan for stored or uploaded text; invalid PLAN_NOT_JSON when it does not parse. */
export function parsePlanText(json: string): Plan {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    throw invalid("PLAN_NOT_JSON", "The deployment plan is not valid JSON.");
  }
  return parsePlan(value);
}

/** Replaces `$Name`, `${Name}` and `$$` (see the file comment); invalid PLAN_VARIABLE_UNKNOWN. */
export { expandVariables };

/**
 * Opens a universal package (.upack bytes) from a Wharf feed; the releases area wires it to the
 * upack services. Rejects with not_found when there is no such package version.
 */
export type FetchPackage = (
  feed: string,
  group: string,
  name: string,
  version: string,
  signal: AbortSignal,
) => Promise<Readable>;

export interface PlanExecutorDeps {
  /** createGuardedFetch(...) configured by the wiring (allowPrivate is the administrator's call). */
  readonly fetch: GuardedFetch;
  readonly fetchPackage: FetchPackage;
  /** Directories deploy-package may write under; none means deploy-package always fails. */
  readonly deployRoots: readonly string[];
  /** Where packages are spooled for random access; default os.tmpdir(). */
  readonly tempDir?: string;
  readonly archiveLimits?: ArchiveLimits;
}

/** A job's context fits: `executor.run(plan, { ...context, variables })`. */
export interface PlanRun {
  readonly variables: Readonly<Record<string, string>>;
  readonly signal: AbortSignal;
  log(level: JobLogLevel, message: string): void;
}

export interface PlanResult {
  readonly outcome: JobOutcome;
  /** The run's variables at the end, set-variable steps included (keys lowercased). */
  readonly variables: Readonly<Record<string, string>>;
}

export interface PlanExecutor {
  /** Runs the steps in order; never rejects: errors end the run failed with a log line. */
  run(plan: Plan, run: PlanRun): Promise<PlanResult>;
}

export function createPlanExecutor(deps: PlanExecutorDeps): PlanExecutor {
  return {
    async run(plan, run) {
      const variables = new Map(Object.entries(run.variables).map(([k, v]) => [k.toLowerCase(), v]));
      let warned = false;
      const log = (level: JobLogLevel, message: string) => {
        if (level === "warn") warned = true;
        run.log(level, message);
      };
      const done = (outcome: JobOutcome): PlanResult => ({ outcome, variables: Object.fromEntries(variables) });
      for (const [index, step] of plan.steps.entries()) {
        const label = `Step ${index + 1} of ${plan.steps.length} (${step.type})`;
        try {
          run.signal.throwIfAborted();
          log("debug", `${label}`);
          const expand = (value: string) => expandVariables(value, variables);
          if (step.type === "fail") {
            log("error", step.message === undefined ? `${label} failed the plan.` : expand(step.message));
            return done("failed");
          }
          await runStep(step, expand, { deps, log, variables, signal: run.signal });
        } catch (error) {
          const reason = run.signal.aborted
            ? "the plan was canceled"
            : error instanceof Error
              ? error.message
              : String(error);
          log("error", `${label} failed: ${reason}`);
          return done("failed");
        }
      }
      return done(warned ? "warned" : "succeeded");
    },
  };
}

interface StepEnv {
  readonly deps: PlanExecutorDeps;
  readonly log: (level: JobLogLevel, message: string) => void;
  readonly variables: Map<string, string>;
  readonly signal: AbortSignal;
}

type RunnableStep = Exclude<PlanStep, { type: "fail" }>;

async function runStep(step: RunnableStep, expand: (value: string) => string, env: StepEnv): Promise<void> {
  const { log, signal } = env;
  switch (step.type) {
    case "log":
      return log(step.level, expand(step.message));
    case "warn":
      return log("warn", expand(step.message));
    case "set-variable":
      env.variables.set(step.name.toLowerCase(), expand(step.value));
      return log("debug", `$${step.name} is set.`);
    case "sleep": {
      const seconds = typeof step.seconds === "number" ? step.seconds : Number(expand(step.seconds));
      if (!Number.isFinite(seconds) || seconds < 0 || seconds > MAX_SLEEP_SECONDS) {
        throw invalid("PLAN_SLEEP_INVALID", `seconds must be a number from 0 to ${MAX_SLEEP_SECONDS}.`);
      }
      log("info", `Sleeping ${seconds} s.`);
      return sleep(seconds * 1000, undefined, { signal });
    }
    case "http": {
      const url = expand(step.url);
      const response = await env.deps.fetch(url, { signal });
      response.body.destroy(); // only the status matters; no point reading up to maxBytes
      const line = `GET ${redactUrl(url)} answered ${response.status}.`;
      if (response.status < 400 || step.onErrorStatus === "ignore") return log("info", line);
      if (step.onErrorStatus === "warn") return log("warn", line);
      throw new DomainError("bad_gateway", "PLAN_HTTP_ERROR_STATUS", line);
    }
    case "deploy-package":
      return deployPackage(
        {
          feed: expand(step.feed),
          group: expand(step.group),
          name: expand(step.name),
          version: expand(step.version),
          target: expand(step.target),
        },
        env,
      );
  }
}

/** Query values of key-like parameters are secrets (docs/STYLE.md "Log"); the rest of the URL is kept. */
function redactUrl(raw: string): string {
  try {
    const url = new URL(raw);
    for (const name of [...url.searchParams.keys()]) {
      if (/key|token|secret|password/i.test(name)) url.searchParams.set(name, "***");
    }
    return url.href;
  } catch {
    return raw;
  }
}

interface PackageTarget {
  readonly feed: string;
  readonly group: string;
  readonly name: string;
  readonly version: string;
  readonly target: string;
}

async function deployPackage(spec: PackageTarget, env: StepEnv): Promise<void> {
  const { deps, signal } = env;
  const target = await resolveTarget(spec.target, deps.deployRoots);
  const title = `${spec.group === "" ? "" : `${spec.group}/`}${spec.name} ${spec.version}`;
  const spool = await mkdtemp(path.join(deps.tempDir ?? os.tmpdir(), "wharf-deploy-"));
  try {
    // Spooled: a ZIP is read from its central directory, at the end, with random access.
    const file = path.join(spool, "package.upack");
    const source = await deps.fetchPackage(spec.feed, spec.group, spec.name, spec.version, signal);
    await pipeline(source, createWriteStream(file, { flags: "wx" }), { signal });
    // openZip refuses unsafe names (zip-slip), links, bombs; local headers are checked as well.
    const reader = await openZip(file, deps.archiveLimits ?? DEFAULT_ARCHIVE_LIMITS);
    try {
      await reader.verifyLocalHeaders();
      const files = await extractPackage(reader, target, signal);
      env.log("info", `Deployed ${title} from feed ${spec.feed} to ${target} (${files} files).`);
      if (files === 0) env.log("warn", `The package ${title} has no files under package/.`);
    } finally {
      await reader.close();
    }
  } finally {
    await rm(spool, { recursive: true, force: true });
  }
}

const PACKAGE_PREFIX = "package/";

/** Writes every entry under package/ below `target` (a real path); returns the number of files. */
async function extractPackage(reader: ZipReader, target: string, signal: AbortSignal): Promise<number> {
  const made = new Map<string, string>([["", target]]);
  const directory = async (relative: string): Promise<string> => {
    const known = made.get(relative);
    if (known !== undefined) return known;
    const parent = await directory(path.posix.dirname(relative) === "." ? "" : path.posix.dirname(relative));
    const real = await ensureDirectoryInside(target, parent, path.posix.basename(relative));
    made.set(relative, real);
    return real;
  };
  let files = 0;
  for (const entry of reader.entries()) {
    if (!entry.name.startsWith(PACKAGE_PREFIX) || entry.name === PACKAGE_PREFIX) continue;
    signal.throwIfAborted();
    const relative = entry.name.slice(PACKAGE_PREFIX.length).replace(/\/$/, "");
    if (entry.isDirectory) {
      await directory(relative);
      continue;
    }
    const parentRelative = path.posix.dirname(relative);
    const parent = await directory(parentRelative === "." ? "" : parentRelative);
    const destination = path.join(parent, path.posix.basename(relative));
    if (!isInside(target, destination)) throw outsideTarget(entry.name);
    // Written beside and renamed over: a symbolic link already at the destination is replaced,
    // never followed, and a reader of the directory never sees half a file.
    const temporary = path.join(parent, `.wharf-${randomUUID()}.tmp`);
    try {
      await pipeline(
        reader.openEntry(entry.name),
        createWriteStream(temporary, { flags: "wx", mode: entry.mode ?? 0o644 }),
        {
          signal,
        },
      );
      await rename(temporary, destination);
    } catch (error) {
      await rm(temporary, { force: true });
      throw error;
    }
    files++;
  }
  return files;
}

const outsideTarget = (what: string) =>
  invalid("PLAN_TARGET_OUTSIDE_ROOT", `${what} resolves outside the allowed deployment directory.`);

/**
 * Makes `parent/segment` a directory if it is none, and returns its real path, refusing one that
 * resolves outside `root` (a symbolic link planted in the target). `parent` is a real path.
 */
async function ensureDirectoryInside(root: string, parent: string, segment: string): Promise<string> {
  const candidate = path.join(parent, segment);
  await mkdir(candidate).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== "EEXIST") throw error;
  });
  const real = await realpath(candidate);
  if (!isInside(root, real)) throw outsideTarget(`The directory ${candidate}`);
  return real;
}

/**
 * The real path of the target directory (created as needed), which must be absolute and inside
 * one of the roots, also after following symbolic links.
 */
async function resolveTarget(target: string, roots: readonly string[]): Promise<string> {
  if (!path.isAbsolute(target)) {
    throw invalid("PLAN_TARGET_NOT_ABSOLUTE", `The target directory ${target} is not an absolute path.`);
  }
  if (roots.length === 0) {
    throw new DomainError(
      "unavailable",
      "PLAN_DEPLOY_DISABLED",
      "Deploying packages is turned off on this Wharf server: no deployment root is configured (WHARF_DEPLOY_ROOT).",
    );
  }
  const wanted = path.resolve(target);
  for (const root of roots) {
    const lexicalRoot = path.resolve(root);
    if (!isInside(lexicalRoot, wanted)) continue;
    const realRoot = await realpath(lexicalRoot);
    let current = realRoot;
    for (const segment of path
      .relative(lexicalRoot, wanted)
      .split(path.sep)
      .filter((s) => s !== "")) {
      current = await ensureDirectoryInside(realRoot, current, segment);
    }
    return current;
  }
  throw invalid("PLAN_TARGET_OUTSIDE_ROOT", `The target directory ${target} is not inside an allowed deployment root.`);
}
