-- Foundation schema: feeds, security (users, groups, tasks, permissions, API keys).
-- Dates are ISO 8601 UTC text with milliseconds.

CREATE TABLE feeds (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  feed_type TEXT NOT NULL,
  feed_group TEXT,
  -- random id that names the feed's own storage; a recreated feed gets a new one
  storage_key TEXT NOT NULL UNIQUE,
  -- every other Feed setting, as validated JSON (see areas/management/feed-settings.ts)
  settings TEXT NOT NULL,
  created_at TEXT NOT NULL,
  modified_at TEXT NOT NULL
) STRICT;

-- One namespace for primary and alternate names, compared case-insensitively.
CREATE TABLE feed_names (
  name_key TEXT PRIMARY KEY,
  feed_id INTEGER NOT NULL REFERENCES feeds(id) ON DELETE CASCADE,
  is_primary INTEGER NOT NULL CHECK (is_primary IN (0, 1))
) STRICT;
CREATE INDEX feed_names_feed ON feed_names(feed_id);

CREATE TABLE users (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  name_key TEXT NOT NULL UNIQUE,
  display_name TEXT,
  email TEXT,
  -- scrypt$N$r$p$salt$hash (base64); NULL means the user cannot log in with a password
  password_hash TEXT,
  created_at TEXT NOT NULL
) STRICT;

CREATE TABLE groups (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  name_key TEXT NOT NULL UNIQUE
) STRICT;

CREATE TABLE group_members (
  group_id INTEGER NOT NULL REFERENCES groups(id) ON DELETE CASCADE,
  user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  PRIMARY KEY (group_id, user_id)
) STRICT;

CREATE TABLE tasks (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  name_key TEXT NOT NULL UNIQUE,
  description TEXT,
  feed_scoped INTEGER NOT NULL CHECK (feed_scoped IN (0, 1)),
  built_in INTEGER NOT NULL CHECK (built_in IN (0, 1)),
  -- JSON array of privilege attribute names (compat.md section 9)
  attributes TEXT NOT NULL
) STRICT;

-- Grant or deny a task to a user, a group or Anonymous; globally, for one feed or a feed group.
CREATE TABLE permissions (
  id INTEGER PRIMARY KEY,
  principal_type TEXT NOT NULL CHECK (principal_type IN ('user', 'group', 'anonymous')),
  user_id INTEGER REFERENCES users(id) ON DELETE CASCADE,
  group_id INTEGER REFERENCES groups(id) ON DELETE CASCADE,
  task_id INTEGER NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
  -- scope by name so that a permission outlives a feed being deleted and recreated
  feed_name_key TEXT,
  feed_group_key TEXT,
  deny INTEGER NOT NULL CHECK (deny IN (0, 1)),
  CHECK ((principal_type = 'user') = (user_id IS NOT NULL)),
  CHECK ((principal_type = 'group') = (group_id IS NOT NULL)),
  CHECK (feed_name_key IS NULL OR feed_group_key IS NULL)
) STRICT;

CREATE TABLE api_keys (
  id INTEGER PRIMARY KEY,
  -- SHA-256 of the key, hex; the key itself is never stored
  key_hash TEXT NOT NULL UNIQUE,
  key_type TEXT NOT NULL CHECK (key_type IN ('System', 'Feed', 'Personal')),
  display_name TEXT,
  description TEXT,
  -- System keys: JSON array of API scopes ("full-control", "feeds", ...)
  system_apis TEXT,
  -- Feed keys: JSON array of "view", "add", "promote", "delete"
  package_permissions TEXT,
  feed_name TEXT,
  feed_group TEXT,
  user_id INTEGER REFERENCES users(id) ON DELETE CASCADE,
  logging TEXT NOT NULL DEFAULT 'None',
  expires_at TEXT,
  last_used_at TEXT,
  created_at TEXT NOT NULL,
  CHECK ((key_type = 'Personal') = (user_id IS NOT NULL))
) STRICT;
