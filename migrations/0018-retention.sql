-- Retention (issue 17 section 1): rules per feed live in the feed's settings (retentionRules,
-- retentionSchedule); what a run did lives here and in its job's log (0009's job_log).

-- When a version was last downloaded: written by the batched download counter in the same
-- UPDATE that adds to `downloads` (areas/upack/download/counts.ts), so it costs no extra write.
-- NULL: never downloaded since this column exists.
ALTER TABLE upack_versions ADD COLUMN last_downloaded_at TEXT;

-- A preview reads every version of a feed with only these columns: covering them keeps the
-- read off the wide rows (manifest, file list), so that 100,000 versions are read in well under
-- a second (bench/retention.ts).
CREATE INDEX upack_versions_retention ON upack_versions(
  package_id, sort_key, version, size, published_at, last_downloaded_at, downloads, is_cached, blob_sha256
);

-- A preview made with POST is kept for an hour under a random token, so that a run can delete
-- exactly what the preview listed (and skip, reporting them, the versions changed since).
CREATE TABLE retention_plans (
  token TEXT PRIMARY KEY,
  feed_id INTEGER NOT NULL REFERENCES feeds(id) ON DELETE CASCADE,
  created_at TEXT NOT NULL,
  -- JSON array of planned deletions: [{id, group, name, version, sha256, rule, reason, bytes}]
  items TEXT NOT NULL CHECK (json_valid(items))
) STRICT;
CREATE INDEX retention_plans_age ON retention_plans(created_at);

-- One row per run, on demand or scheduled; its job (jobs.id) holds the status and the log lines.
CREATE TABLE retention_runs (
  id INTEGER PRIMARY KEY,
  feed_id INTEGER NOT NULL REFERENCES feeds(id) ON DELETE CASCADE,
  job_id INTEGER REFERENCES jobs(id) ON DELETE SET NULL,
  trigger TEXT NOT NULL CHECK (trigger IN ('manual', 'schedule')),
  -- a user or API key display name, or 'Wharf' for a scheduled run
  requested_by TEXT NOT NULL,
  created_at TEXT NOT NULL,
  -- the preview's list (JSON, as in retention_plans.items) when the run was asked to delete exactly it
  planned TEXT CHECK (planned IS NULL OR json_valid(planned)),
  finished_at TEXT,
  versions_deleted INTEGER NOT NULL DEFAULT 0,
  bytes_freed INTEGER NOT NULL DEFAULT 0,
  -- planned versions left alone because they changed since the preview
  versions_skipped INTEGER NOT NULL DEFAULT 0
) STRICT;
CREATE INDEX retention_runs_by_feed ON retention_runs(feed_id, id);

-- The scheduler's memory per feed: the schedule it last saw and the instant from which its next
-- firing is computed (the last firing, or when the schedule was first seen or changed).
CREATE TABLE retention_schedule_state (
  feed_id INTEGER PRIMARY KEY REFERENCES feeds(id) ON DELETE CASCADE,
  schedule TEXT NOT NULL,
  since TEXT NOT NULL
) STRICT;
