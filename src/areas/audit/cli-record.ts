import os from "node:os";
import type { Clock } from "../../domain/clock.js";
import type { Db } from "../../storage/database.js";
import { createAuditRepository } from "./repository.js";

/**
 * The CLI's data commands work on the database directly, not over HTTP: they leave their audit
 * record here. Call before the command runs; the returned function, given its exit code, appends
 * one record when the command changed any row (SQLite's total_changes, triggers included), so
 * lists and reads leave none; `changed`, when given, decides instead (gc: blobs deleted, its marks
 * aside). Named by command and subcommand, with the subcommand's first
 * argument when it is a plain word (a name): never an option's value, which may be a password.
 * Await the returned function before closing the database: its promise settles once the record is
 * stored (on SQLite, within the call) or the insert failed.
 */
export function auditLocalCommand(
  db: Db,
  clock: Clock,
  command: string,
  args: readonly string[],
): (code: number, changed?: boolean) => Promise<void> {
  const changesBefore = totalChanges(db);
  return async (code, changed) => {
    // A command that knows whether it changed something says so (gc's own bookkeeping rows are no change).
    if (!(changed ?? totalChanges(db) !== changesBefore)) return;
    const [subcommand, first] = args;
    const words = [subcommand, first].filter((word) => word !== undefined && !word.startsWith("-"));
    const plainSubcommand = words[0] === subcommand;
    await createAuditRepository(db).insert([
      {
        at: clock.now().toISOString(),
        actor: { kind: "cli", name: `cli:${osUser()}` },
        address: "local",
        action: plainSubcommand && subcommand !== undefined ? `cli ${command} ${subcommand}` : `cli ${command}`,
        object: plainSubcommand && words[1] !== undefined ? `name=${words[1]}` : "",
        status: code,
        outcome: code === 0 ? "success" : "failed",
        requestId: `cli-${process.pid}`,
      },
    ]);
  };
}

function totalChanges(db: Db): number {
  return (db.prepare("SELECT total_changes() AS n").get() as { n: number }).n;
}

function osUser(): string {
  try {
    return os.userInfo().username;
  } catch {
    return "unknown";
  }
}
