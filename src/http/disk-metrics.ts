import { Gauge, type Metric } from "prom-client";
import type { DiskSpace } from "../storage/disk-space.js";

/** The data directory's free space in /metrics, so that an alert can fire before uploads are refused. */
export function diskMetrics(disk: DiskSpace): Metric[] {
  // One measurement per scrape for the three gauges (status() keeps it for a second).
  const free = new Gauge({
    name: "wharf_disk_free_bytes",
    help: "Bytes free on the data directory's filesystem (-1: unknown)",
    registers: [],
    async collect() {
      this.set((await disk.status()).freeBytes ?? -1);
    },
  });
  const threshold = new Gauge({
    name: "wharf_disk_free_threshold_bytes",
    help: "Free bytes below which uploads are refused (WHARF_MIN_FREE_DISK_BYTES, plus the space reserve if it was used)",
    registers: [],
    async collect() {
      this.set((await disk.status()).requiredBytes);
    },
  });
  const low = new Gauge({
    name: "wharf_disk_low",
    help: "1 while free space is below the threshold and uploads are refused, else 0",
    registers: [],
    async collect() {
      this.set((await disk.status()).low ? 1 : 0);
    },
  });
  return [free, threshold, low];
}
