-- A feed's names keep the order they were given in, on both databases (docs/cluster-mode.md):
-- until now SQLite kept it only as rowid order, and PostgreSQL, whose rows have no such order,
-- not at all. `position` is the name's place in [name, ...alternateNames]: 0 for the primary.
-- The rows already there were inserted in the order given, so their rowid order is that order.
ALTER TABLE feed_names ADD COLUMN position INTEGER NOT NULL DEFAULT 0;
UPDATE feed_names
   SET position = (SELECT count(*) FROM feed_names o
                    WHERE o.feed_id = feed_names.feed_id
                      AND (o.is_primary > feed_names.is_primary
                           OR (o.is_primary = feed_names.is_primary AND o.rowid < feed_names.rowid)));
-- A feed's names are read in this order: the index gives them so, as it gave rowid order before.
DROP INDEX feed_names_feed;
CREATE INDEX feed_names_feed ON feed_names(feed_id, position);
