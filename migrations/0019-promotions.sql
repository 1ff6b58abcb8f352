-- Promotions and repackagings of universal packages (issue 17 section 2; docs/compat.md 5.4): where a
-- version came from, who moved it, when and why. A row is written by a trigger on the event its save
-- raises (migrations/0017, lifecycle/events.ts), so it commits, or rolls back, in the same
-- transaction as the version it describes: a promoted or repackaged version never lacks its record.
--
-- Feeds are kept by id and by their name at the time, without a foreign key: the record outlives a
-- renamed or deleted feed, and a later feed of the same name does not inherit it (ids decide).

CREATE TABLE package_promotions (
  id INTEGER PRIMARY KEY,
  promoted_at TEXT NOT NULL,
  from_feed_id INTEGER,
  from_feed_name TEXT NOT NULL,
  to_feed_id INTEGER,
  to_feed_name TEXT NOT NULL,
  package_group TEXT NOT NULL,
  package_name TEXT NOT NULL,
  version TEXT NOT NULL,
  -- lowercased, as upack_packages and upack_versions match them (migrations/0004)
  group_key TEXT NOT NULL,
  name_key TEXT NOT NULL,
  version_key TEXT NOT NULL,
  -- the source's version row at the time (it may be deleted since)
  from_version_id INTEGER,
  -- the promoted file: the same bytes in both feeds
  sha1 TEXT,
  sha256 TEXT,
  promoted_by TEXT NOT NULL,
  comments TEXT,
  event_id INTEGER NOT NULL
) STRICT;
CREATE INDEX package_promotions_to ON package_promotions(to_feed_id, group_key, name_key, id);
CREATE INDEX package_promotions_from ON package_promotions(from_feed_id, group_key, name_key, id);

CREATE TABLE package_repackagings (
  id INTEGER PRIMARY KEY,
  repackaged_at TEXT NOT NULL,
  -- where the new version was saved
  feed_id INTEGER,
  feed_name TEXT NOT NULL,
  package_group TEXT NOT NULL,
  package_name TEXT NOT NULL,
  group_key TEXT NOT NULL,
  name_key TEXT NOT NULL,
  new_version TEXT NOT NULL,
  new_version_key TEXT NOT NULL,
  -- the original: its feed, version and file
  from_feed_id INTEGER,
  from_feed_name TEXT NOT NULL,
  from_version TEXT NOT NULL,
  from_sha1 TEXT,
  from_sha256 TEXT,
  repackaged_by TEXT NOT NULL,
  comments TEXT,
  event_id INTEGER NOT NULL
) STRICT;
CREATE INDEX package_repackagings_feed ON package_repackagings(feed_id, group_key, name_key, id);
CREATE INDEX package_repackagings_from ON package_repackagings(from_feed_id, group_key, name_key, id);

-- A promotion's save says package.promoted with data {fromFeed, fromFeedId, fromVersionId, sha1,
-- sha256, comments} (areas/promotions/promote-service.ts).
CREATE TRIGGER package_promotion_recorded AFTER INSERT ON lifecycle_events
WHEN NEW.type = 'package.promoted'
BEGIN
  INSERT INTO package_promotions (promoted_at, from_feed_id, from_feed_name, to_feed_id, to_feed_name,
    package_group, package_name, version, group_key, name_key, version_key, from_version_id, sha1, sha256,
    promoted_by, comments, event_id)
  VALUES (NEW.occurred_at, json_extract(NEW.data, '$.fromFeedId'), coalesce(json_extract(NEW.data, '$.fromFeed'), ''),
    NEW.feed_id, coalesce(NEW.feed_name, ''), coalesce(NEW.package_group, ''), coalesce(NEW.package_name, ''),
    coalesce(NEW.package_version, ''), lower(coalesce(NEW.package_group, '')), lower(coalesce(NEW.package_name, '')),
    lower(coalesce(NEW.package_version, '')), json_extract(NEW.data, '$.fromVersionId'),
    json_extract(NEW.data, '$.sha1'), json_extract(NEW.data, '$.sha256'), NEW.actor,
    json_extract(NEW.data, '$.comments'), NEW.id);
END;

-- A repackaging's save is an ordinary package.added (or .overwritten) whose data names the original:
-- {repackagedFrom: {feed, feedId, group, name, version, sha1, sha256}, comments}.
CREATE TRIGGER package_repackaging_recorded AFTER INSERT ON lifecycle_events
WHEN NEW.type IN ('package.added', 'package.overwritten') AND json_type(NEW.data, '$.repackagedFrom') = 'object'
BEGIN
  INSERT INTO package_repackagings (repackaged_at, feed_id, feed_name, package_group, package_name, group_key,
    name_key, new_version, new_version_key, from_feed_id, from_feed_name, from_version, from_sha1, from_sha256,
    repackaged_by, comments, event_id)
  VALUES (NEW.occurred_at, NEW.feed_id, coalesce(NEW.feed_name, ''), coalesce(NEW.package_group, ''),
    coalesce(NEW.package_name, ''), lower(coalesce(NEW.package_group, '')), lower(coalesce(NEW.package_name, '')),
    coalesce(NEW.package_version, ''), lower(coalesce(NEW.package_version, '')),
    json_extract(NEW.data, '$.repackagedFrom.feedId'), coalesce(json_extract(NEW.data, '$.repackagedFrom.feed'), ''),
    coalesce(json_extract(NEW.data, '$.repackagedFrom.version'), ''), json_extract(NEW.data, '$.repackagedFrom.sha1'),
    json_extract(NEW.data, '$.repackagedFrom.sha256'), NEW.actor, json_extract(NEW.data, '$.comments'), NEW.id);
END;
