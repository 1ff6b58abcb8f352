-- The persistent job runner (src/jobs/runner.ts; PRODUCT.md "How the delivery half becomes
-- real"). Deployments, remediations and whatever else runs in the background are rows here, so
-- that they survive a restart: pending jobs still run, and a job found executing when the runner
-- starts ends failed (its process died while it ran).

CREATE TABLE jobs (
  id INTEGER PRIMARY KEY,
  -- selects the handler; the runner refuses kinds it has no handler for when they are enqueued
  kind TEXT NOT NULL,
  -- the handler's input as JSON; what it means is the handler's business (e.g. a deployment id)
  payload TEXT NOT NULL CHECK (json_valid(payload)),
  -- compat.md 7.4's deployment statuses; a canceled job ends failed with canceled_at set
  -- (DeploymentInfo keeps canceledOn beside the status rather than a status of its own)
  status TEXT NOT NULL DEFAULT 'pending'
    CHECK (status IN ('pending', 'executing', 'succeeded', 'warned', 'failed')),
  -- times as yyyy-MM-ddTHH:mm:ss.fffZ from the runner's clock; NULL until it happens
  created_at TEXT NOT NULL,
  started_at TEXT,
  ended_at TEXT,
  canceled_at TEXT,
  -- not taken before this instant (a deployment's startTime, compat.md 7.2; a scheduled
  -- remediation); NULL: as soon as there is room
  not_before TEXT,
  -- how many times a runner took the job: more than 1 would mean a job ran twice, which the
  -- restart rule exists to prevent (an interrupted job is failed, never retried)
  attempts INTEGER NOT NULL DEFAULT 0
) STRICT;
-- The runner takes the oldest pending job (lowest id) and looks for executing ones at start.
CREATE INDEX jobs_by_status ON jobs(status, id);

-- Log lines, one row each, written as they happen: a job that dies half way keeps what it logged.
-- A row per line rather than an appended text column keeps each write small and constant-cost.
CREATE TABLE job_log (
  id INTEGER PRIMARY KEY,
  job_id INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  level TEXT NOT NULL CHECK (level IN ('debug', 'info', 'warn', 'error')),
  message TEXT NOT NULL,
  logged_at TEXT NOT NULL
) STRICT;
CREATE INDEX job_log_by_job ON job_log(job_id, id);
