-- Connectors to remote feeds (area D; compat.md 5.3, 6.1) and package deployment records
-- (area C; compat.md 6.2, 2.4).

-- A connector is a remote universal feed (another Wharf or a ProGet) that feeds naming it in
-- their `connectors` setting serve packages from. Names are unique case-insensitively.
CREATE TABLE connectors (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  name_key TEXT NOT NULL UNIQUE,
  -- the remote feed's URL, e.g. https://proget.example.com/upack/internal
  url TEXT NOT NULL,
  feed_type TEXT NOT NULL,
  -- JSON: timeout (seconds), metadataCacheEnabled, metadataCacheMinutes, metadataCacheCount,
  -- username, filters (shared wildcard/negation patterns)
  settings TEXT NOT NULL,
  -- sent to the upstream as Basic credentials, so it is kept as given; never returned by the API
  password TEXT,
  -- health (area D): 'healthy', 'error' or 'unknown' until the first check
  health_state TEXT NOT NULL DEFAULT 'unknown' CHECK (health_state IN ('healthy', 'error', 'unknown')),
  health_error TEXT,
  -- yyyy-MM-ddTHH:mm:ss.fffZ of the last check; NULL while unknown
  health_checked_at TEXT,
  created_at TEXT NOT NULL,
  modified_at TEXT NOT NULL
) STRICT;

-- Answers of connectors' metadata requests (packages, versions, search), kept so that they can
-- be served again within metadataCacheMinutes, and after that while the upstream is down.
CREATE TABLE connector_metadata (
  connector_id INTEGER NOT NULL REFERENCES connectors(id) ON DELETE CASCADE,
  -- the request, normalised (path and sorted query)
  request_key TEXT NOT NULL,
  -- HTTP status of the upstream's answer (200, or 404 for a negative entry)
  status INTEGER NOT NULL,
  body TEXT NOT NULL,
  fetched_at TEXT NOT NULL,
  PRIMARY KEY (connector_id, request_key)
) STRICT, WITHOUT ROWID;
CREATE INDEX connector_metadata_age ON connector_metadata(connector_id, fetched_at);

-- A package version deployed somewhere (seed-api.md "Package deployment record"). The package is
-- named as the caller named it; it need not be stored in the feed (it may be a connector's).
CREATE TABLE package_deployments (
  id INTEGER PRIMARY KEY,
  feed_id INTEGER NOT NULL REFERENCES feeds(id) ON DELETE CASCADE,
  group_name TEXT NOT NULL,
  name TEXT NOT NULL,
  version TEXT NOT NULL,
  -- lowercased group, name and version: matched case-insensitively
  group_key TEXT NOT NULL,
  name_key TEXT NOT NULL,
  version_key TEXT NOT NULL,
  application TEXT NOT NULL,
  description TEXT NOT NULL,
  target TEXT NOT NULL,
  user_name TEXT,
  url TEXT,
  -- when it was deployed (the record's Date, default now) and when Wharf recorded it
  deployed_at TEXT NOT NULL,
  recorded_at TEXT NOT NULL
) STRICT;
CREATE INDEX package_deployments_version
  ON package_deployments(feed_id, group_key, name_key, version_key, deployed_at);
