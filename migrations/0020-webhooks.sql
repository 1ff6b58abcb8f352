-- Webhooks (issue 17 section 3; docs/compat.md 10): who is told of which events, and the log of
-- every delivery. Deliveries are made from the event outbox (0017) in the same transaction that
-- marks its events dispatched, so an event is either still pending or has all its deliveries.
CREATE TABLE webhooks (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  -- NULL: every feed's events and those of no feed (releases, builds, deployments). A feed's
  -- webhooks are bound to its id, not its name, and go with it.
  feed_id INTEGER REFERENCES feeds(id) ON DELETE CASCADE,
  -- JSON array of event types (lifecycle/events.ts EVENT_TYPES)
  events TEXT NOT NULL CHECK (json_valid(events) AND json_type(events) = 'array'),
  -- {feed} {group} {name} {version} {event} are replaced, URL-encoded, in the path and query only
  url_template TEXT NOT NULL,
  method TEXT NOT NULL DEFAULT 'POST' CHECK (method IN ('POST', 'PUT', 'PATCH')),
  -- JSON object of extra request headers
  headers TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(headers) AND json_type(headers) = 'object'),
  -- the signing secret, sealed (storage/secrets.ts, purpose 'webhook-secret'); never returned
  secret TEXT NOT NULL,
  active INTEGER NOT NULL DEFAULT 1 CHECK (active IN (0, 1)),
  created_by TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
) STRICT;
CREATE INDEX webhooks_feed ON webhooks(feed_id);

CREATE TABLE webhook_deliveries (
  id INTEGER PRIMARY KEY,
  webhook_id INTEGER NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
  -- the outbox row it was made from (no foreign key: dispatched events are pruned); NULL for a ping
  event_id INTEGER,
  event_type TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('pending', 'succeeded', 'failed')),
  attempts INTEGER NOT NULL DEFAULT 0,
  -- when a pending delivery is next tried
  next_attempt_at TEXT,
  created_at TEXT NOT NULL,
  -- the JSON body, the same on every attempt (the signature's timestamp is not)
  request_body TEXT NOT NULL,
  -- what the last attempt sent to and got back
  request_url TEXT,
  last_attempt_at TEXT,
  last_status INTEGER,
  last_error TEXT,
  last_duration_ms INTEGER,
  completed_at TEXT
) STRICT;
CREATE INDEX webhook_deliveries_due ON webhook_deliveries(next_attempt_at) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_of_webhook ON webhook_deliveries(webhook_id, id);
CREATE INDEX webhook_deliveries_completed ON webhook_deliveries(completed_at) WHERE state <> 'pending';
