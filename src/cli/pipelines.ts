import fs from "node:fs/promises";
import { z } from "zod";
import { createReleasesServices } from "../areas/releases/index.js";
import type { PipelineDraft } from "../areas/releases/model.js";
import { pipelineDraft, pipelineInputSchema } from "../areas/releases/pipeline-input.js";
import { pipelineJson } from "../areas/releases/schemas.js";
import type { Clock } from "../domain/clock.js";
import { invalid } from "../domain/errors.js";
import type { Db } from "../storage/database.js";
import { type CommandIo, type CommandLine, printTable, readStandardInput, runCommand, UsageError } from "./command.js";

/**
 * `wharf pipelines ...`: the catalog service of `/api/pipelines/create|get|list|delete`, run as an
 * administrator. A pipeline is created from a JSON file holding what `POST /api/pipelines/create`
 * takes; `show` prints the same shape (plus its `id`, which `create` ignores), so that one
 * pipeline's definition can be the start of another's.
 */

export interface PipelinesCommandContext extends CommandIo {
  readonly db: Db;
  readonly clock: Clock;
  /** Standard input for `--file -`; reads the process's when absent (tests pass their own). */
  readonly readStdin?: () => Promise<string>;
}

export const PIPELINES_USAGE = `Usage:
  wharf pipelines list
  wharf pipelines show <name>
  wharf pipelines create --file <pipeline.json>      (--file - reads standard input)
  wharf pipelines delete <name>

The file holds what POST /api/pipelines/create takes, for example:
  {
    "name": "Web",
    "rejectOlderBuilds": true,
    "stages": [
      { "name": "Integration", "environmentName": "Integration", "plan": [{ "type": "log", "message": "hello" }] },
      { "name": "Production", "environmentName": "Production", "planName": "deploy-web" }
    ]
  }
Steps are those of a deployment plan (README, "Deployment plans"). show prints a pipeline in the
same shape; a pipeline that releases or builds use cannot be deleted.`;

const OPTIONS = { file: { type: "string" } } as const;

/** The body of `POST /api/pipelines/create`, checked as strictly; an `id` (as `show` prints) is ignored. */
const pipelineFile = pipelineInputSchema.extend({ id: z.unknown().optional() });

/** Runs one pipelines subcommand; returns the exit code (0 ok, 1 refused by Wharf, 2 bad arguments). */
export function pipelinesCommand(args: string[], ctx: PipelinesCommandContext): Promise<number> {
  return runCommand({ usage: PIPELINES_USAGE, options: OPTIONS }, args, ctx, run);
}

async function run(
  { values, positionals }: CommandLine<typeof OPTIONS>,
  ctx: PipelinesCommandContext,
): Promise<number> {
  const [subcommand, name, ...extra] = positionals;
  const { catalog } = createReleasesServices(ctx);
  if (subcommand === undefined) throw new UsageError("a subcommand is required");
  if (!["list", "show", "create", "delete"].includes(subcommand)) {
    throw new UsageError(`unknown subcommand '${subcommand}'`);
  }
  if (subcommand !== "create" && values.file !== undefined) {
    throw new UsageError(`--file does not apply to 'pipelines ${subcommand}'`);
  }
  if (subcommand === "list" || subcommand === "create") {
    if (name !== undefined) throw new UsageError(`'pipelines ${subcommand}' takes no arguments`);
  } else {
    if (name === undefined) throw new UsageError(`'pipelines ${subcommand}' needs a pipeline name`);
    if (extra.length > 0) throw new UsageError(`unexpected argument '${extra[0]}'`);
  }

  switch (subcommand) {
    case "list": {
      const pipelines = await catalog.listPipelines();
      if (pipelines.length === 0) {
        ctx.out("No pipelines.");
        return 0;
      }
      printTable(
        [
          ["ID", "NAME", "REJECT OLDER", "STAGES"],
          ...pipelines.map((p) => [
            String(p.id),
            p.name,
            String(p.rejectOlderBuilds),
            p.stages.map((s) => s.name).join(" -> "),
          ]),
        ],
        ctx.out,
      );
      return 0;
    }
    case "show":
      ctx.out(JSON.stringify(pipelineJson(await catalog.getPipeline(name as string)), null, 2));
      return 0;
    case "create": {
      if (values.file === undefined) throw new UsageError("'pipelines create' needs --file <pipeline.json>");
      const draft = parsePipeline(await readSource(values.file, ctx), values.file);
      ctx.out(JSON.stringify(pipelineJson(await catalog.createPipeline(draft)), null, 2));
      return 0;
    }
    default:
      await catalog.deletePipeline(name as string);
      ctx.out(`Deleted pipeline '${name}'.`);
      return 0;
  }
}

async function readSource(file: string, ctx: PipelinesCommandContext): Promise<string> {
  if (file === "-") return (ctx.readStdin ?? readStandardInput)();
  try {
    return await fs.readFile(file, "utf8");
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : String(error);
    throw invalid("FILE_UNREADABLE", `cannot read ${file}: ${reason}`);
  }
}

/** The file's pipeline, or invalid naming the first thing wrong in it (as a JSON path). */
function parsePipeline(text: string, file: string): PipelineDraft {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw invalid("INVALID_PIPELINE_FILE", `${file} is not JSON: ${error instanceof Error ? error.message : error}`);
  }
  const parsed = pipelineFile.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.length ? issue.path.map(String).join(".") : "(top level)";
    throw invalid("INVALID_PIPELINE_FILE", `${file}: ${where}: ${issue?.message ?? "invalid"}`);
  }
  return pipelineDraft(parsed.data);
}
