-- Signed-in browsers of the web UI (issue 16; src/areas/web-ui/session/). One row per sign-in. The
-- cookie carries a random 32-byte token; only its SHA-256 is stored, so that a copy of the database
-- signs no one in. A row ends at sign-out (deleted), at its idle or absolute expiry (deleted when
-- next seen or by the purge at each sign-in), with its user (cascade), or when the user's password
-- changes or is removed (password_stamp no longer matches).
CREATE TABLE ui_sessions (
  id INTEGER PRIMARY KEY,
  -- SHA-256 of the cookie's token (32 bytes)
  token_hash BLOB NOT NULL UNIQUE,
  user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  -- the CSRF secret of the session's form tokens (@fastify/csrf-protection): tied to this row, so
  -- that a token made for one session is worthless in another and a tossed cookie cannot plant one
  csrf_secret TEXT NOT NULL,
  -- SHA-256 (hex, first 32 digits) of the user's password hash at sign-in: a changed or removed
  -- password ends every session made with the old one
  password_stamp TEXT NOT NULL,
  -- yyyy-MM-ddTHH:mm:ss.fffZ; last_seen_at is written at most once a minute
  created_at TEXT NOT NULL,
  last_seen_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  -- where the sign-in came from, for the user's and administrator's eyes (bounded lengths)
  address TEXT,
  user_agent TEXT
) STRICT;
CREATE INDEX ui_sessions_user ON ui_sessions(user_id);
CREATE INDEX ui_sessions_expiry ON ui_sessions(expires_at);
