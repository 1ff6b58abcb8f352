-- The event outbox (issue 17; docs/compat.md 10): one row per package event and per status change
-- of a release, build or deployment, inserted in the same transaction as the change that caused
-- it, so that no event is lost when the process dies right after a commit. Webhook deliveries are
-- made from these rows; `dispatched_at` is set once they have been fanned out.
--
-- The feed is kept by id and by its name at the time: the feed may be renamed or deleted before
-- the event is delivered, and the event must still say where it happened.
CREATE TABLE lifecycle_events (
  id INTEGER PRIMARY KEY,
  occurred_at TEXT NOT NULL,
  type TEXT NOT NULL,
  feed_id INTEGER,
  feed_name TEXT,
  package_group TEXT,
  package_name TEXT,
  package_version TEXT,
  -- a user or API key display name, or 'Wharf' for what the server does on its own
  actor TEXT NOT NULL,
  -- JSON object: what else the event type carries (a promotion's source, a purge's rule, ...)
  data TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(data)),
  dispatched_at TEXT
) STRICT;
CREATE INDEX lifecycle_events_pending ON lifecycle_events(id) WHERE dispatched_at IS NULL;

-- Releases, builds and deployments change status in many statements (release-repository.ts, the
-- deployment runner); triggers raise their events from all of them at once, in the same
-- transaction. Their time is SQLite's clock rather than the application's.
CREATE TRIGGER release_created AFTER INSERT ON releases
BEGIN
  INSERT INTO lifecycle_events (occurred_at, type, actor, data)
  VALUES (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), 'release.status', NEW.created_by,
    json_object('application', (SELECT name FROM applications WHERE id = NEW.application_id),
                'release', NEW.number, 'status', NEW.status, 'previousStatus', NULL));
END;

CREATE TRIGGER release_status_changed AFTER UPDATE OF status ON releases WHEN NEW.status IS NOT OLD.status
BEGIN
  INSERT INTO lifecycle_events (occurred_at, type, actor, data)
  VALUES (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), 'release.status',
    CASE WHEN NEW.status = 'canceled' THEN coalesce(NEW.canceled_by, 'Wharf') ELSE 'Wharf' END,
    json_object('application', (SELECT name FROM applications WHERE id = NEW.application_id),
                'release', NEW.number, 'status', NEW.status, 'previousStatus', OLD.status));
END;

CREATE TRIGGER build_created AFTER INSERT ON builds
BEGIN
  INSERT INTO lifecycle_events (occurred_at, type, actor, data)
  VALUES (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), 'build.status', NEW.created_by,
    json_object('application', (SELECT name FROM applications WHERE id = NEW.application_id),
                'release', (SELECT number FROM releases WHERE id = NEW.release_id),
                'build', NEW.number, 'status', NEW.status, 'previousStatus', NULL));
END;

CREATE TRIGGER build_status_changed AFTER UPDATE OF status ON builds WHEN NEW.status IS NOT OLD.status
BEGIN
  INSERT INTO lifecycle_events (occurred_at, type, actor, data)
  VALUES (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), 'build.status',
    CASE WHEN NEW.status = 'rejected' THEN coalesce(NEW.rejected_by, 'Wharf') ELSE 'Wharf' END,
    json_object('application', (SELECT name FROM applications WHERE id = NEW.application_id),
                'release', (SELECT number FROM releases WHERE id = NEW.release_id),
                'build', NEW.number, 'status', NEW.status, 'previousStatus', OLD.status));
END;

CREATE TRIGGER deployment_created AFTER INSERT ON deployments
BEGIN
  INSERT INTO lifecycle_events (occurred_at, type, actor, data)
  SELECT strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), 'deployment.status', NEW.created_by,
    json_object('application', a.name, 'release', r.number, 'build', b.number, 'deployment', NEW.id,
                'pipeline', NEW.pipeline_name, 'stage', NEW.stage_name, 'environment', NEW.environment_name,
                'status', NEW.status, 'previousStatus', NULL)
  FROM builds b JOIN applications a ON a.id = b.application_id LEFT JOIN releases r ON r.id = b.release_id
  WHERE b.id = NEW.build_id;
END;

CREATE TRIGGER deployment_status_changed AFTER UPDATE OF status ON deployments WHEN NEW.status IS NOT OLD.status
BEGIN
  INSERT INTO lifecycle_events (occurred_at, type, actor, data)
  SELECT strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), 'deployment.status',
    CASE WHEN NEW.canceled_by IS NOT NULL AND OLD.canceled_by IS NULL THEN NEW.canceled_by ELSE 'Wharf' END,
    json_object('application', a.name, 'release', r.number, 'build', b.number, 'deployment', NEW.id,
                'pipeline', NEW.pipeline_name, 'stage', NEW.stage_name, 'environment', NEW.environment_name,
                'status', NEW.status, 'previousStatus', OLD.status)
  FROM builds b JOIN applications a ON a.id = b.application_id LEFT JOIN releases r ON r.id = b.release_id
  WHERE b.id = NEW.build_id;
END;
