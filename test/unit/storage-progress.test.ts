import { describe, expect, it } from "vitest";
import type { MoveStateJson } from "../../src/areas/management/storage-move-routes.js";
import { duration, progressLine, statusLine, summaryLine } from "../../src/cli/storage-progress.js";

/** The lines `wharf storage move|status` prints about a move. */

const MIB = 1024 * 1024;
const move: MoveStateJson = {
  feed: "tools",
  from: "disk",
  to: "azure:http://127.0.0.1:10000/devstoreaccount1/packages/wharf",
  state: "copying",
  blobsTotal: 40,
  blobsDone: 10,
  bytesTotal: 400 * MIB,
  bytesDone: 100 * MIB,
  startedAt: "2026-11-28T00:00:00.000Z",
  updatedAt: "2026-11-28T00:00:10.000Z",
};

describe("storage move lines", () => {
  it("progress: counts, bytes, percent, rate and the time left at that rate", () => {
    expect(progressLine(move, { bytesPerSecond: 10 * MIB })).toBe(
      "copying 10/40 blobs, 100.0 MiB/400.0 MiB (25%), 10.0 MiB/s, ETA 30s",
    );
    // No rate yet (first look) or none measured (nothing moved since): the time left is unknown.
    expect(progressLine(move, undefined)).toBe("copying 10/40 blobs, 100.0 MiB/400.0 MiB (25%), ETA ?");
    expect(progressLine(move, { bytesPerSecond: 0 })).toMatch(/, 0 B\/s, ETA \?$/);
    expect(progressLine({ ...move, state: "deleting", blobsDone: 40, bytesDone: 400 * MIB }, undefined)).toBe(
      "deleting old copies: 40/40 blobs, 400.0 MiB/400.0 MiB (100%)",
    );
  });

  it("summary: what moved where in how long, or why it failed and how to retry", () => {
    const done = {
      ...move,
      state: "done" as const,
      blobsDone: 40,
      bytesDone: 400 * MIB,
      finishedAt: "2026-11-28T00:01:20.000Z",
    };
    expect(summaryLine(done)).toBe(`moved tools: 40 blobs (400.0 MiB) from disk to ${move.to} in 1m20s, 5.0 MiB/s`);
    const failed = {
      ...move,
      state: "failed" as const,
      error: "Azure storage did not answer while storing a blob (ECONNREFUSED).",
    };
    expect(summaryLine(failed)).toBe(
      `move of tools to ${move.to} failed after 10/40 blobs: ${failed.error}; the feed keeps serving; ` +
        "retry with 'wharf storage move tools --retry'",
    );
  });

  it("status: state, stores, counts and times", () => {
    expect(statusLine({ ...move, state: "failed", error: "boom" })).toBe(
      `tools: failed, from disk to ${move.to}, 10/40 blobs, 100.0 MiB/400.0 MiB; started 2026-11-28T00:00:00.000Z; error: boom`,
    );
  });

  it("durations", () => {
    expect([duration(3.24), duration(42.4), duration(75), duration(3 * 3600 + 5 * 60), duration(Number.NaN)]).toEqual([
      "3.2s",
      "42s",
      "1m15s",
      "3h05m",
      "?",
    ]);
  });
});
