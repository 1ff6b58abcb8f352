-- Keys, permissions and connector references bound to what they were made for, not to a name
-- (issue 11, PRODUCT.md "Security baseline"). A name is only a label that a later feed or
-- connector may take: bound to names, an old feed key opened a new feed created under its feed's
-- name. Bound to ids, a deleted feed's keys and permissions go with it, a feed recreated under the
-- same name starts with none, and a rename carries them along.

-- Feed keys and feed-scoped permissions name their feed by id. The old name columns are no longer
-- read or written (SQLite cannot drop feed_name_key: a CHECK names it); they are cleared below.
ALTER TABLE api_keys ADD COLUMN feed_id INTEGER REFERENCES feeds(id) ON DELETE CASCADE;
ALTER TABLE permissions ADD COLUMN feed_id INTEGER REFERENCES feeds(id) ON DELETE CASCADE;
CREATE INDEX api_keys_feed ON api_keys(feed_id);
CREATE INDEX permissions_feed ON permissions(feed_id);

-- A row written before this migration has only a name: it is bound to the feed that carries that
-- name (primary or alternate) today. Names are ASCII (domain/feeds.ts), so lower() matches the
-- lowercased name_key exactly.
UPDATE api_keys
   SET feed_id = (SELECT n.feed_id FROM feed_names n WHERE n.name_key = lower(api_keys.feed_name))
 WHERE feed_name IS NOT NULL;
UPDATE permissions
   SET feed_id = (SELECT n.feed_id FROM feed_names n WHERE n.name_key = permissions.feed_name_key)
 WHERE feed_name_key IS NOT NULL;

-- Orphans (their feed was deleted) must refuse everything; they would otherwise wake up for
-- whichever feed takes the name next, so they go.
DELETE FROM api_keys WHERE feed_name IS NOT NULL AND feed_id IS NULL;
DELETE FROM permissions WHERE feed_name_key IS NOT NULL AND feed_id IS NULL;
UPDATE api_keys SET feed_name = NULL WHERE feed_name IS NOT NULL;
UPDATE permissions SET feed_name_key = NULL, feed_name = NULL WHERE feed_name_key IS NOT NULL OR feed_name IS NOT NULL;

-- A feed's connectors, in the order its `connectors` setting lists them, by id: a connector
-- deleted (and perhaps recreated under its name) is no longer the feed's, a renamed one still is.
-- They were names in feeds.settings; names that no connector has are dropped, as their connector
-- is gone and a new one of that name must not inherit the reference.
CREATE TABLE feed_connectors (
  feed_id INTEGER NOT NULL REFERENCES feeds(id) ON DELETE CASCADE,
  position INTEGER NOT NULL,
  connector_id INTEGER NOT NULL REFERENCES connectors(id) ON DELETE CASCADE,
  PRIMARY KEY (feed_id, position),
  UNIQUE (feed_id, connector_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX feed_connectors_connector ON feed_connectors(connector_id);

INSERT OR IGNORE INTO feed_connectors (feed_id, position, connector_id)
SELECT f.id, CAST(j.key AS INTEGER), c.id
  FROM feeds f, json_each(f.settings, '$.connectors') j
  JOIN connectors c ON c.name_key = lower(j.value)
 WHERE j.type = 'text';
UPDATE feeds SET settings = json_remove(settings, '$.connectors')
 WHERE json_type(settings, '$.connectors') IS NOT NULL;

-- Ids are reused: SQLite gives a new row the largest id plus one, so a feed created after the
-- newest one was deleted gets its id. The foreign keys above delete what a deleted row leaves
-- behind, but only on connections that enforce them (Wharf's do; a sqlite3 shell does not by
-- default). These triggers do the same on every connection, so that nothing bound to a deleted
-- feed, connector, user, group or task can ever be taken over by a new one with its id.
CREATE TRIGGER feeds_deleted AFTER DELETE ON feeds BEGIN
  DELETE FROM api_keys WHERE feed_id = OLD.id;
  DELETE FROM permissions WHERE feed_id = OLD.id;
  DELETE FROM feed_connectors WHERE feed_id = OLD.id;
END;
CREATE TRIGGER connectors_deleted AFTER DELETE ON connectors BEGIN
  DELETE FROM feed_connectors WHERE connector_id = OLD.id;
END;
CREATE TRIGGER users_deleted AFTER DELETE ON users BEGIN
  DELETE FROM api_keys WHERE user_id = OLD.id;
  DELETE FROM permissions WHERE user_id = OLD.id;
  DELETE FROM group_members WHERE user_id = OLD.id;
END;
CREATE TRIGGER groups_deleted AFTER DELETE ON groups BEGIN
  DELETE FROM permissions WHERE group_id = OLD.id;
  DELETE FROM group_members WHERE group_id = OLD.id;
END;
CREATE TRIGGER tasks_deleted AFTER DELETE ON tasks BEGIN
  DELETE FROM permissions WHERE task_id = OLD.id;
END;
