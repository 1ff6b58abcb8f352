-- Configuration management (area B; docs/seed-api.md B, docs/compat.md 8.1-8.5; issue 13): servers,
-- roles and the desired configuration they carry, what checks find, and remediation jobs. Names
-- are matched case-insensitively through lowercased *_key columns, like feeds and environments.
-- Environments are the releases area's table (0008): one table, one API.

-- Stored credentials for reaching servers (SSH). The secret (private key or password) is sealed
-- with the data directory's secret key (storage/secrets.ts) and never returned by any API.
CREATE TABLE credentials (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  name_key TEXT NOT NULL UNIQUE,
  kind TEXT NOT NULL CHECK (kind IN ('ssh-key', 'ssh-password')),
  user_name TEXT NOT NULL,
  secret TEXT NOT NULL,
  created_at TEXT NOT NULL,
  modified_at TEXT NOT NULL
) STRICT;

-- A machine whose configuration Wharf manages (compat.md 8.2). `root_path` confines every item
-- path: for `local` the directory on the Wharf host (inside WHARF_DEPLOY_ROOT), for `ssh` an
-- absolute directory on the target; an `agent` is confined by its own --root.
CREATE TABLE servers (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  name_key TEXT NOT NULL UNIQUE,
  server_type TEXT NOT NULL CHECK (server_type IN ('local', 'agent', 'ssh')),
  drift_mode TEXT NOT NULL DEFAULT 'reportOnly'
    CHECK (drift_mode IN ('none', 'reportOnly', 'automaticallyRemediate')),
  active INTEGER NOT NULL DEFAULT 1 CHECK (active IN (0, 1)),
  root_path TEXT,
  host_name TEXT,
  port INTEGER,
  -- a credential in use cannot be deleted (no ON DELETE action)
  credentials_id INTEGER REFERENCES credentials(id),
  -- ssh: the host key's SHA-256 fingerprint (base64, as OpenSSH prints it), pinned on creation
  host_key_sha256 TEXT,
  temp_path TEXT,
  -- agent: the SHA-256 of the agent's key (shown once), NULL when revoked or never issued
  agent_key_hash TEXT UNIQUE,
  agent_key_created_at TEXT,
  agent_last_seen_at TEXT,
  agent_version TEXT,
  -- JSON object name -> value, or name -> { "value", "sensitive" } (compat.md 8.4)
  variables TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(variables)),
  created_at TEXT NOT NULL,
  modified_at TEXT NOT NULL
) STRICT;

-- Roles carry desired configuration, and may depend on other roles (applied first; cycles are
-- refused on write).
CREATE TABLE roles (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  name_key TEXT NOT NULL UNIQUE,
  description TEXT,
  variables TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(variables)),
  created_at TEXT NOT NULL,
  modified_at TEXT NOT NULL
) STRICT;

CREATE TABLE role_dependencies (
  role_id INTEGER NOT NULL REFERENCES roles(id) ON DELETE CASCADE,
  depends_on_id INTEGER NOT NULL REFERENCES roles(id) ON DELETE CASCADE,
  PRIMARY KEY (role_id, depends_on_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX role_dependencies_reverse ON role_dependencies(depends_on_id, role_id);

-- `position`: the order the server lists its roles in (items are applied in that order).
CREATE TABLE server_roles (
  server_id INTEGER NOT NULL REFERENCES servers(id) ON DELETE CASCADE,
  role_id INTEGER NOT NULL REFERENCES roles(id) ON DELETE CASCADE,
  position INTEGER NOT NULL,
  PRIMARY KEY (server_id, role_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX server_roles_role ON server_roles(role_id, server_id);

CREATE TABLE server_environments (
  server_id INTEGER NOT NULL REFERENCES servers(id) ON DELETE CASCADE,
  environment_id INTEGER NOT NULL REFERENCES environments(id) ON DELETE CASCADE,
  PRIMARY KEY (server_id, environment_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX server_environments_environment ON server_environments(environment_id, server_id);

-- Desired configuration: one row per item of a role or of a server itself (collectionRole null).
-- `definition` is the validated item (src/drift/items); a sensitive file's content is sealed in it.
CREATE TABLE config_items (
  id INTEGER PRIMARY KEY,
  role_id INTEGER REFERENCES roles(id) ON DELETE CASCADE,
  server_id INTEGER REFERENCES servers(id) ON DELETE CASCADE,
  position INTEGER NOT NULL,
  type TEXT NOT NULL,
  key TEXT NOT NULL,
  definition TEXT NOT NULL CHECK (json_valid(definition)),
  CHECK ((role_id IS NULL) <> (server_id IS NULL))
) STRICT;
CREATE UNIQUE INDEX config_items_role ON config_items(role_id, type, key) WHERE role_id IS NOT NULL;
CREATE UNIQUE INDEX config_items_server ON config_items(server_id, type, key) WHERE server_id IS NOT NULL;

-- Variables of no entity (compat.md 8.4 `/api/variables/global`).
CREATE TABLE global_variables (
  name TEXT NOT NULL,
  name_key TEXT NOT NULL PRIMARY KEY,
  value TEXT NOT NULL,
  sensitive INTEGER NOT NULL DEFAULT 0 CHECK (sensitive IN (0, 1))
) STRICT, WITHOUT ROWID;

-- One check of one server: what was collected, or why it could not be (`error_text`). At most
-- one executing per server: a check is never run twice at once. `job_id`: the remediation job
-- whose closing check this is (NULL for a routine or requested check).
CREATE TABLE config_collections (
  id INTEGER PRIMARY KEY,
  server_id INTEGER NOT NULL REFERENCES servers(id) ON DELETE CASCADE,
  job_id INTEGER REFERENCES jobs(id) ON DELETE SET NULL,
  status TEXT NOT NULL CHECK (status IN ('executing', 'completed', 'error')),
  started_at TEXT NOT NULL,
  ended_at TEXT,
  error_text TEXT,
  -- counts of the collected items, so that a status of every server reads no item rows
  items INTEGER NOT NULL DEFAULT 0,
  drifted INTEGER NOT NULL DEFAULT 0,
  unknown INTEGER NOT NULL DEFAULT 0
) STRICT;
CREATE INDEX config_collections_server ON config_collections(server_id, id);
CREATE UNIQUE INDEX config_collections_executing ON config_collections(server_id) WHERE status = 'executing';

-- What a check found per item. `differences`: JSON array of { property, desired, actual } (hashes,
-- never the content, of sensitive items). `role_name` keeps the role as it was named then.
CREATE TABLE config_collected_items (
  collection_id INTEGER NOT NULL REFERENCES config_collections(id) ON DELETE CASCADE,
  position INTEGER NOT NULL,
  type TEXT NOT NULL,
  key TEXT NOT NULL,
  role_id INTEGER REFERENCES roles(id) ON DELETE SET NULL,
  role_name TEXT,
  status TEXT NOT NULL CHECK (status IN ('current', 'drifted', 'unknown')),
  differences TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(differences)),
  error_text TEXT,
  PRIMARY KEY (collection_id, position)
) STRICT, WITHOUT ROWID;

-- A remediation job (a row of `jobs`, kind `configuration.remediate`) and what it was asked for
-- (docs/seed-api.md B "Trigger remediation job").
CREATE TABLE config_remediations (
  job_id INTEGER PRIMARY KEY REFERENCES jobs(id) ON DELETE CASCADE,
  name TEXT,
  entity_type TEXT NOT NULL CHECK (entity_type IN ('server', 'role', 'environment')),
  entity_name TEXT NOT NULL,
  simulate INTEGER NOT NULL CHECK (simulate IN (0, 1)),
  created_at TEXT NOT NULL
) STRICT;

-- The servers a remediation covers; `role_id` limits it to that role's items (NULL: all items).
CREATE TABLE config_remediation_targets (
  job_id INTEGER NOT NULL REFERENCES config_remediations(job_id) ON DELETE CASCADE,
  server_id INTEGER NOT NULL REFERENCES servers(id) ON DELETE CASCADE,
  role_id INTEGER REFERENCES roles(id) ON DELETE CASCADE,
  PRIMARY KEY (job_id, server_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX config_remediation_targets_server ON config_remediation_targets(server_id, job_id);
