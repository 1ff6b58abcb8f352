-- Releases, builds and deployments (area E; compat.md 7.1-7.4, 7.8, 8.2). Names are matched
-- case-insensitively through lowercased *_key columns, like feeds and connectors. Who did
-- something is kept as display text (`API` for System keys, compat.md 7.3): the actor may be a
-- key that is deleted later, and the record must outlive it.

-- An application groups releases and builds. `release_usage` says whether builds need a release
-- (compat.md 7.8 Required|Optional|Disabled; `none` = Disabled); `build_number_scheme` how a
-- build number is chosen when the caller gives none.
CREATE TABLE applications (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  name_key TEXT NOT NULL UNIQUE,
  description TEXT,
  group_name TEXT,
  active INTEGER NOT NULL DEFAULT 1 CHECK (active IN (0, 1)),
  release_usage TEXT NOT NULL CHECK (release_usage IN ('required', 'optional', 'none')),
  build_number_scheme TEXT NOT NULL CHECK (build_number_scheme IN ('sequential', 'date-based', 'unique')),
  created_at TEXT NOT NULL
) STRICT;

-- Environments (compat.md 8.2): pipeline stages target them by name.
CREATE TABLE environments (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  name_key TEXT NOT NULL UNIQUE,
  -- deleting a parent leaves its children at the top level rather than deleting them
  parent_id INTEGER REFERENCES environments(id) ON DELETE SET NULL,
  active INTEGER NOT NULL DEFAULT 1 CHECK (active IN (0, 1)),
  -- JSON object name -> value
  variables TEXT NOT NULL DEFAULT '{}'
) STRICT;

-- Named deployment plans: a JSON array of steps (log, warn, fail, sleep, set-variable, http,
-- deploy-package; src/jobs/plan-steps.ts), validated on write and executed by the job runner.
CREATE TABLE deployment_plans (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  name_key TEXT NOT NULL UNIQUE,
  steps TEXT NOT NULL,
  created_at TEXT NOT NULL,
  modified_at TEXT NOT NULL
) STRICT;

CREATE TABLE pipelines (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  name_key TEXT NOT NULL UNIQUE,
  -- compat.md 7.4: whether a newer build of a release entering a stage rejects the older builds
  -- of that release in the same stage
  reject_older_builds INTEGER NOT NULL DEFAULT 1 CHECK (reject_older_builds IN (0, 1)),
  created_at TEXT NOT NULL,
  modified_at TEXT NOT NULL
) STRICT;

-- Ordered stages. The environment and plan are named, not referenced: a pipeline may be defined
-- before them, and a deployment copies what it used (see deployments).
CREATE TABLE pipeline_stages (
  pipeline_id INTEGER NOT NULL REFERENCES pipelines(id) ON DELETE CASCADE,
  position INTEGER NOT NULL,
  name TEXT NOT NULL,
  name_key TEXT NOT NULL,
  environment_name TEXT,
  -- either a named plan or an inline JSON array of steps (or neither: nothing to run)
  plan_name TEXT,
  plan_steps TEXT,
  CHECK (plan_name IS NULL OR plan_steps IS NULL),
  PRIMARY KEY (pipeline_id, position),
  UNIQUE (pipeline_id, name_key)
) STRICT, WITHOUT ROWID;

-- Releases of an application; the number is unique per application, `sequence` orders them.
CREATE TABLE releases (
  id INTEGER PRIMARY KEY,
  application_id INTEGER NOT NULL REFERENCES applications(id) ON DELETE CASCADE,
  number TEXT NOT NULL,
  number_key TEXT NOT NULL,
  name TEXT NOT NULL,
  sequence INTEGER NOT NULL,
  -- a pipeline in use cannot be deleted (no ON DELETE action): its releases would lose their stages
  pipeline_id INTEGER REFERENCES pipelines(id),
  status TEXT NOT NULL CHECK (status IN ('active', 'deployed', 'canceled')),
  template TEXT,
  target_date TEXT,
  created_by TEXT NOT NULL,
  created_on TEXT NOT NULL,
  canceled_by TEXT,
  canceled_on TEXT,
  cancel_reason TEXT,
  UNIQUE (application_id, number_key)
) STRICT;

-- Builds, of a release or (BuildMaster 2022+) pipeline-less. `sequence` carries the sequential
-- numbers the schemes hand out; the number is unique per release (or per application without).
CREATE TABLE builds (
  id INTEGER PRIMARY KEY,
  application_id INTEGER NOT NULL REFERENCES applications(id) ON DELETE CASCADE,
  release_id INTEGER REFERENCES releases(id) ON DELETE CASCADE,
  pipeline_id INTEGER REFERENCES pipelines(id),
  number TEXT NOT NULL,
  number_key TEXT NOT NULL,
  sequence INTEGER NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('active', 'deployed', 'rejected')),
  -- the furthest stage a deployment of this build was created for (compat.md 7.3 furthestStage)
  furthest_stage TEXT,
  furthest_position INTEGER,
  created_by TEXT NOT NULL,
  created_on TEXT NOT NULL,
  rejected_by TEXT,
  rejected_on TEXT
) STRICT;
CREATE UNIQUE INDEX builds_number ON builds(application_id, COALESCE(release_id, 0), number_key);
CREATE INDEX builds_release ON builds(release_id);
-- Builds of an application in id order (newest last): a badge or "latest build" query walks them
-- newest first and stops at the first match instead of sorting them all.
CREATE INDEX builds_application ON builds(application_id);

-- A build sent to a pipeline stage. Pipeline, stage, plan and environment are copied, so that the
-- record stays true when the pipeline changes. `execution_id` is filled by the job runner.
CREATE TABLE deployments (
  id INTEGER PRIMARY KEY,
  build_id INTEGER NOT NULL REFERENCES builds(id) ON DELETE CASCADE,
  pipeline_name TEXT NOT NULL,
  stage_name TEXT NOT NULL,
  stage_position INTEGER NOT NULL,
  plan_name TEXT,
  -- the steps to run, copied from the named plan or the stage's inline plan (JSON array)
  plan_steps TEXT NOT NULL DEFAULT '[]',
  environment_id INTEGER REFERENCES environments(id) ON DELETE SET NULL,
  environment_name TEXT,
  status TEXT NOT NULL CHECK (status IN ('pending', 'executing', 'succeeded', 'warned', 'failed')),
  forced INTEGER NOT NULL DEFAULT 0 CHECK (forced IN (0, 1)),
  -- compat.md 7.2 startTime: not to be started before this instant
  start_after TEXT,
  started_at TEXT,
  ended_at TEXT,
  created_by TEXT NOT NULL,
  created_on TEXT NOT NULL,
  canceled_by TEXT,
  canceled_on TEXT,
  log TEXT NOT NULL DEFAULT '',
  execution_id INTEGER
) STRICT;
CREATE INDEX deployments_build ON deployments(build_id);
CREATE INDEX deployments_pending ON deployments(status) WHERE status IN ('pending', 'executing');

-- `$Name` variables given with a release, build or deployment (compat.md 7.1). Exactly one owner.
CREATE TABLE release_variables (
  id INTEGER PRIMARY KEY,
  release_id INTEGER REFERENCES releases(id) ON DELETE CASCADE,
  build_id INTEGER REFERENCES builds(id) ON DELETE CASCADE,
  deployment_id INTEGER REFERENCES deployments(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  name_key TEXT NOT NULL,
  value TEXT NOT NULL,
  CHECK ((release_id IS NOT NULL) + (build_id IS NOT NULL) + (deployment_id IS NOT NULL) = 1)
) STRICT;
CREATE UNIQUE INDEX release_variables_owner
  ON release_variables(COALESCE(release_id, 0), COALESCE(build_id, 0), COALESCE(deployment_id, 0), name_key);
-- A build's variables, covering what a badge filter (`$Branch=main`) compares: without it every
-- candidate build scanned the whole table (150 ms per badge at 10,000 builds).
CREATE INDEX release_variables_build ON release_variables(build_id, name_key, value) WHERE build_id IS NOT NULL;
