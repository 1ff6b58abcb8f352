-- The audit log (issue 17 section 4): one row per change made through an API, the UI or the CLI,
-- and per refused authorisation. Who acted is a user name or an API key's display name, never a
-- secret; what was acted on is the route's parameters, never its query string or body.
--
-- Append-only at the SQL level: UPDATE always raises, and DELETE raises for every row at or after
-- the pruning cutoff kept in audit_retention. Pruning (the retention period) first moves the
-- cutoff forward, then deletes what lies before it; the cutoff cannot move back, cannot be set
-- later than a day ago (so no statement can make recent records deletable), and its row can be
-- neither deleted nor duplicated. This guards against the application and a careless query; a
-- person who can write the database file can still drop the triggers.
CREATE TABLE audit_records (
  id INTEGER PRIMARY KEY,
  -- ISO 8601 UTC, from the application's clock
  at TEXT NOT NULL,
  -- anonymous, user, personal-key, system-key, feed-key, cli
  actor_kind TEXT NOT NULL,
  -- a user name or an API key's display name ('' for Anonymous)
  actor_name TEXT NOT NULL,
  -- the client's address ('local' for the CLI)
  address TEXT NOT NULL,
  -- 'METHOD /route/:pattern', or 'cli <command> <subcommand>'
  action TEXT NOT NULL,
  -- the route's parameters as 'name=value' terms separated by spaces ('' when none)
  object TEXT NOT NULL,
  status INTEGER NOT NULL,
  outcome TEXT NOT NULL CHECK (outcome IN ('success', 'refused', 'failed')),
  request_id TEXT NOT NULL
) STRICT;
CREATE INDEX audit_records_at ON audit_records(at);
CREATE INDEX audit_records_actor ON audit_records(actor_name, id);
CREATE INDEX audit_records_action ON audit_records(action, id);
CREATE INDEX audit_records_object ON audit_records(object, id);

CREATE TABLE audit_retention (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  -- rows whose `at` sorts before this may be deleted; '' (the start): none may
  prune_before TEXT NOT NULL
) STRICT;
INSERT INTO audit_retention (id, prune_before) VALUES (1, '');

CREATE TRIGGER audit_records_no_update BEFORE UPDATE ON audit_records
BEGIN
  SELECT RAISE(ABORT, 'audit records are append-only');
END;

-- INSERT OR REPLACE deletes the row it replaces without firing DELETE triggers: refused too.
CREATE TRIGGER audit_records_no_replace BEFORE INSERT ON audit_records
WHEN EXISTS (SELECT 1 FROM audit_records WHERE id = NEW.id)
BEGIN
  SELECT RAISE(ABORT, 'audit records are append-only');
END;

CREATE TRIGGER audit_records_no_delete BEFORE DELETE ON audit_records
WHEN OLD.at >= (SELECT prune_before FROM audit_retention WHERE id = 1)
BEGIN
  SELECT RAISE(ABORT, 'audit records are append-only: only those past the retention period may be deleted');
END;

CREATE TRIGGER audit_retention_forward BEFORE UPDATE ON audit_retention
WHEN NEW.id IS NOT OLD.id
  OR NEW.prune_before < OLD.prune_before
  OR NEW.prune_before > strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-1 day')
BEGIN
  SELECT RAISE(ABORT, 'the audit pruning cutoff only moves forward, and never past a day ago');
END;

CREATE TRIGGER audit_retention_kept BEFORE DELETE ON audit_retention
BEGIN
  SELECT RAISE(ABORT, 'the audit pruning cutoff cannot be deleted');
END;

CREATE TRIGGER audit_retention_single BEFORE INSERT ON audit_retention
BEGIN
  SELECT RAISE(ABORT, 'the audit pruning cutoff has one row');
END;
