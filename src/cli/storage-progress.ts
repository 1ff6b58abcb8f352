import type { MoveStateJson } from "../areas/management/storage-move-routes.js";
import { formatBytes } from "./progress.js";

/**
 * The lines `wharf storage move` and `status` print about a move (GET /api/storage/move). The rate
 * is measured by the watcher between two states it saw (bytes per second), so that it needs no
 * clock of the server's.
 */

export interface Rate {
  readonly bytesPerSecond: number;
}

/** "copying 12/40 blobs, 1.2 MiB/4.0 MiB (30%), 2.5 MiB/s, ETA 2s". */
export function progressLine(move: MoveStateJson, rate: Rate | undefined): string {
  const percent = move.bytesTotal > 0 ? Math.floor((100 * move.bytesDone) / move.bytesTotal) : 100;
  const speed = rate === undefined ? "" : `, ${formatBytes(rate.bytesPerSecond)}/s`;
  const left = move.bytesTotal - move.bytesDone;
  const eta =
    move.state !== "copying"
      ? ""
      : rate && rate.bytesPerSecond > 0
        ? `, ETA ${duration(left / rate.bytesPerSecond)}`
        : ", ETA ?";
  const phase = move.state === "deleting" ? "deleting old copies:" : move.state;
  return (
    `${phase} ${move.blobsDone}/${move.blobsTotal} blobs, ` +
    `${formatBytes(move.bytesDone)}/${formatBytes(move.bytesTotal)} (${percent}%)${speed}${eta}`
  );
}

/** The last line: what moved where and how long it took, or why it failed and how to retry. */
export function summaryLine(move: MoveStateJson): string {
  const seconds = (Date.parse(move.finishedAt ?? move.updatedAt) - Date.parse(move.startedAt)) / 1000;
  const rate = seconds > 0 ? `, ${formatBytes(move.bytesDone / seconds)}/s` : "";
  if (move.state === "failed") {
    return (
      `move of ${move.feed} to ${move.to} failed after ${move.blobsDone}/${move.blobsTotal} blobs: ${move.error ?? "unknown error"}; ` +
      `the feed keeps serving; retry with 'wharf storage move ${move.feed} --retry'`
    );
  }
  return (
    `moved ${move.feed}: ${move.blobsDone} blobs (${formatBytes(move.bytesDone)}) from ${move.from} to ${move.to} ` +
    `in ${duration(seconds)}${rate}`
  );
}

/** `wharf storage status`: one line with the state, the counts and the times. */
export function statusLine(move: MoveStateJson): string {
  const finished = move.finishedAt === undefined ? "" : `, finished ${move.finishedAt}`;
  const error = move.error === undefined ? "" : `; error: ${move.error}`;
  return (
    `${move.feed}: ${move.state}, from ${move.from} to ${move.to}, ${move.blobsDone}/${move.blobsTotal} blobs, ` +
    `${formatBytes(move.bytesDone)}/${formatBytes(move.bytesTotal)}; started ${move.startedAt}${finished}${error}`
  );
}

/** 75 -> "1m15s", 3.2 -> "3.2s". */
export function duration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return "?";
  if (seconds < 60) return `${seconds < 10 ? seconds.toFixed(1) : Math.round(seconds)}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes}m${String(Math.round(seconds % 60)).padStart(2, "0")}s`;
  return `${Math.floor(minutes / 60)}h${String(minutes % 60).padStart(2, "0")}m`;
}
