-- SQLite's 0023: a feed's names keep the order they were given in. `position` is the name's place
-- in [name, ...alternateNames]: 0 for the primary. The order the rows already there were given in was
-- never kept here, so they get the order they were read back in until now: name_key's.
ALTER TABLE feed_names ADD COLUMN position integer NOT NULL DEFAULT 0;
UPDATE feed_names n
   SET position = o.position
  FROM (SELECT name_key,
               row_number() OVER (PARTITION BY feed_id ORDER BY is_primary DESC, name_key) - 1 AS position
          FROM feed_names) o
 WHERE o.name_key = n.name_key AND o.position <> n.position;
-- The names are read in this order (as on SQLite, whose index gives them so).
DROP INDEX feed_names_feed;
CREATE INDEX feed_names_feed ON feed_names(feed_id, position);
