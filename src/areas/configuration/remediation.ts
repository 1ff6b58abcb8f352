import type { Clock } from "../../domain/clock.js";
import { invalid, notFound } from "../../domain/errors.js";
import { ANONYMOUS } from "../../domain/principal.js";
import type { AppliedChange, DesiredItem } from "../../drift/model.js";
import type { Job, JobContext, JobOutcome, JobRunner } from "../../jobs/runner.js";
import type { PackageDeploymentService } from "../package-deployment/index.js";
import type { Checker } from "./checker.js";
import { desiredStateOf, expandRoles, itemsOfRole } from "./desired-state.js";
import type { InfrastructureRepository, ServerSummary } from "./infrastructure-repository.js";
import type { EntityType, RemediationRepository, RemediationTarget } from "./remediation-repository.js";
import type { ServerTransport } from "./transport.js";

/**
 * Remediation jobs (issue 13 section 4; docs/seed-api.md B "Trigger remediation job"; research
 * next-areas.md 1.5.5): `configuration.remediate` jobs of the one persistent job runner, so they
 * survive restarts by its rule (pending ones still run, one found executing ends failed). The
 * token is the job id; `start` becomes the job's notBefore.
 *
 * Per server the job covers, one after another: collect first when the last collection is
 * missing, failed, or older than the desired configuration (the server's or its roles' last
 * change); remediate only the items that collection found drifted (a role target: only that
 * role's items); log every change (descriptions name paths and hashes, never content); record a
 * package deployment (area C) for each package installed; then check again (a collection with the
 * job's id). `simulate` logs what would change, changes nothing, and ends completed. The job fails
 * when a server cannot be reached or an item is still not current after its remediation.
 */
export const REMEDIATION_JOB = "configuration.remediate";

/** The words `remediate/status` answers (docs/seed-api.md "States and transitions"). */
export type RemediationState = "pending" | "running" | "completed" | "faulted" | "disabled";

export interface RemediationRequest {
  readonly entityType: EntityType;
  readonly entityName: string;
  /** The seed's `job`: a display name. */
  readonly name?: string | undefined;
  /** Not before this instant; absent: now. */
  readonly start?: Date | undefined;
  readonly simulate: boolean;
}

export interface RemediationService {
  /** Creates the job; its id is the token. 404 for an unknown entity. */
  request(request: RemediationRequest): Promise<number>;
  /** The state of a remediation job by token; 400 for a token that names none. */
  stateOf(token: string): Promise<RemediationState>;
  /** After a check found drift on an automaticallyRemediate server: a job unless one is pending or running for it. */
  remediateAutomatically(server: ServerSummary): Promise<number | undefined>;
}

export interface RemediationDeps {
  readonly clock: Clock;
  readonly jobs: JobRunner;
  /** Remediation jobs executing at once (configCheckConcurrency). */
  readonly concurrency: number;
  readonly infrastructure: InfrastructureRepository;
  readonly remediations: RemediationRepository;
  readonly checker: Checker;
  readonly transportOf: (server: ServerSummary) => ServerTransport;
  /** Where installed packages are recorded (area C); absent: not recorded. */
  readonly deployments?: Pick<PackageDeploymentService, "record"> | undefined;
}

interface Payload {
  readonly entityType: EntityType;
  readonly entityName: string;
  readonly simulate: boolean;
  /** `roleId`: a role target (by id: the role may be renamed before the job runs); null: all items. */
  readonly targets: readonly { readonly serverId: number; readonly roleId: number | null }[];
}

const message = (error: unknown) => (error instanceof Error ? error.message || error.name : String(error));
const plural = (count: number, word: string) => `${count} ${word}${count === 1 ? "" : "s"}`;

export function createRemediationService(deps: RemediationDeps): RemediationService {
  const { clock, jobs, infrastructure, remediations, checker } = deps;

  function entityNotFound(type: EntityType, name: string) {
    return notFound("CONFIG_ENTITY_NOT_FOUND", `There is no ${type} named '${name}'.`);
  }

  /** The servers a remediation of the entity covers (role: those whose roles include it, through dependencies too). */
  async function targetsOf(
    type: EntityType,
    name: string,
  ): Promise<{ canonical: string; targets: Payload["targets"] }> {
    if (type === "server") {
      const server = await infrastructure.findServer(name);
      if (server === undefined) throw entityNotFound(type, name);
      return { canonical: server.name, targets: [{ serverId: server.id, roleId: null }] };
    }
    if (type === "environment") {
      const environment = await infrastructure.findEnvironment(name);
      if (environment === undefined) throw entityNotFound(type, name);
      const servers = await infrastructure.environmentServers(environment.id);
      return { canonical: environment.name, targets: servers.map((s) => ({ serverId: s.id, roleId: null })) };
    }
    const role = await infrastructure.findRole(name);
    if (role === undefined) throw entityNotFound(type, name);
    const servers: ServerSummary[] = [];
    for (const server of await infrastructure.listServers()) {
      if ((await expandRoles(infrastructure, server.id)).some((r) => r.id === role.id)) servers.push(server);
    }
    return { canonical: role.name, targets: servers.map((s) => ({ serverId: s.id, roleId: role.id })) };
  }

  async function request(input: RemediationRequest): Promise<number> {
    const { canonical, targets } = await targetsOf(input.entityType, input.entityName);
    const payload: Payload = {
      entityType: input.entityType,
      entityName: canonical,
      simulate: input.simulate,
      targets,
    };
    const jobId = await jobs.enqueue(REMEDIATION_JOB, payload, input.start ? { notBefore: input.start } : {});
    const rows: RemediationTarget[] = targets.map((target) => ({
      serverId: target.serverId,
      roleId: target.roleId ?? undefined,
    }));
    await remediations.record(
      {
        jobId,
        name: input.name,
        entityType: input.entityType,
        entityName: canonical,
        simulate: input.simulate,
        createdAt: clock.now().toISOString(),
      },
      rows,
    );
    return jobId;
  }

  async function stateOf(token: string): Promise<RemediationState> {
    const id = /^\s*\d{1,15}\s*$/.test(token) ? Number(token) : undefined;
    const job = id === undefined ? undefined : await jobs.findJob(id);
    if (job === undefined || job.kind !== REMEDIATION_JOB) {
      throw invalid("INVALID_REMEDIATION_TOKEN", `The token '${token}' names no remediation job.`);
    }
    return stateOfJob(job);
  }

  async function remediateAutomatically(server: ServerSummary): Promise<number | undefined> {
    if ((await remediations.open(server.id)).length > 0) return undefined;
    return request({ entityType: "server", entityName: server.name, name: "Automatic remediation", simulate: false });
  }

  async function recordInstalled(server: ServerSummary, changes: readonly AppliedChange[], context: JobContext) {
    if (deps.deployments === undefined) return;
    for (const { installed } of changes) {
      if (installed === undefined) continue;
      try {
        await deps.deployments.record(
          {
            feedName: installed.feed,
            groupName: installed.group,
            packageName: installed.name,
            version: installed.version,
            details: {
              application: "Wharf configuration",
              description: `Installed into ${installed.target} on ${server.name} by a package item.`,
              target: server.name,
              userName: "Wharf configuration",
            },
          },
          ANONYMOUS,
        );
      } catch (error) {
        context.log(
          "warn",
          `Could not record the deployment of ${installed.name} ${installed.version}: ${message(error)}`,
        );
      }
    }
  }

  /** Remediates one server; false when it could not be reached or an item could not be fixed. */
  async function remediateServer(
    server: ServerSummary,
    roleId: number | null,
    simulate: boolean,
    job: Job,
    context: JobContext,
  ): Promise<boolean> {
    const desired = await desiredStateOf(infrastructure, server.id, (text) => context.log("info", text));
    const roleName = roleId === null ? null : desired.roles.find((role) => role.id === roleId)?.name;
    if (roleName === undefined) {
      context.log("warn", `${server.name} no longer has the role this job remediates; skipped.`);
      return true;
    }
    const scope: DesiredItem[] = roleName === null ? [...desired.items] : itemsOfRole(desired.items, roleName);
    // The engine collects these items first and changes only those it finds drifted then: drift made
    // since the last check is remediated too, and a change to the desired state or a variable counts.
    const items = scope;
    if (items.length === 0) {
      context.log("info", `${server.name}: no items${roleName === null ? "" : ` of ${roleName}`} to remediate.`);
      return true;
    }
    context.log(
      "info",
      `${server.name}: ${simulate ? "simulating the remediation of" : "remediating"} ${plural(items.length, "item")} (those found drifted now).`,
    );
    let outcome;
    try {
      outcome = await deps
        .transportOf(server)
        .remediate(server, items, { variables: desired.variables, signal: context.signal, log: context.log, simulate });
    } catch (error) {
      context.log("error", `${server.name} could not be remediated: ${message(error)}`);
      return false;
    }
    // The engine logged each change (or, simulating, each change it would make) through context.log.
    if (simulate) {
      context.log(
        "info",
        `${server.name}: ${plural(outcome.changes.length, "change")} would be made; nothing was changed.`,
      );
      return true;
    }
    await recordInstalled(server, outcome.changes, context);
    const notFixed = outcome.results.filter((result) => result.status === "drifted");
    for (const result of notFixed) {
      context.log(
        "error",
        `${result.type} ${result.key} is still ${result.status}${result.error ? `: ${result.error}` : "."}`,
      );
    }
    const closing = await checker.check(server.id, {
      jobId: job.id,
      fresh: true,
      signal: context.signal,
      log: context.log,
    });
    if (closing?.status === "completed") {
      context.log(
        closing.drifted === 0 ? "info" : "warn",
        `${server.name} checked again: ${plural(closing.drifted, "item")} drifted, ${closing.unknown} unknown of ${closing.items}.`,
      );
    } else if (closing?.status === "error") {
      context.log("error", `${server.name} could not be checked again: ${closing.errorText ?? "unknown error"}`);
      return false;
    }
    return notFixed.length === 0;
  }

  const run = async (job: Job, context: JobContext): Promise<JobOutcome> => {
    const payload = job.payload as Payload;
    const what = `${payload.entityType} ${payload.entityName}`;
    context.log("info", `Remediating ${what}${payload.simulate ? " (simulation: nothing is changed)" : ""}.`);
    if (payload.targets.length === 0) context.log("warn", `The ${what} has no servers.`);
    let ok = true;
    for (const target of payload.targets) {
      context.signal.throwIfAborted();
      const server = await infrastructure.getServer(target.serverId);
      if (server === undefined || !server.active) {
        context.log("warn", `The server ${target.serverId} was deleted or is inactive; skipped.`);
        continue;
      }
      if (!(await remediateServer(server, target.roleId, payload.simulate, job, context))) ok = false;
    }
    return ok ? "succeeded" : "failed";
  };

  jobs.handle(REMEDIATION_JOB, run, { concurrency: Math.max(1, deps.concurrency) });
  return { request, stateOf, remediateAutomatically };
}

/** docs/compat.md 8.1: pending, running, completed (succeeded or warned), faulted, disabled (canceled before it ran). */
export function stateOfJob(job: Pick<Job, "status" | "canceledAt" | "startedAt">): RemediationState {
  switch (job.status) {
    case "pending":
      return "pending";
    case "executing":
      return "running";
    case "succeeded":
    case "warned":
      return "completed";
    case "failed":
      return job.canceledAt !== undefined && job.startedAt === undefined ? "disabled" : "faulted";
  }
}
