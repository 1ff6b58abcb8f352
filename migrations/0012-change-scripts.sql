-- Database change scripts (issue 14; seed-api.md area H, compat.md 7.7): SQL scripts kept per
-- release of an application, read by the native method DatabaseChangeScripts_GetChangeScripts and
-- written by DatabaseChangeScripts_CreateOrUpdateChangeScript (BuildMaster's names). A script belongs
-- to one release (and through it to one application): deleting either deletes its scripts. The name
-- is unique per release, compared case-insensitively through `name_key`, like every name in 0008.
-- Who created and last changed a script is display text (releases/actor.ts: `API` for System
-- keys), as on releases: the actor may be a key deleted later, the record must outlive it.
CREATE TABLE change_scripts (
  id INTEGER PRIMARY KEY,
  release_id INTEGER NOT NULL REFERENCES releases(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  name_key TEXT NOT NULL,
  script_text TEXT NOT NULL,
  -- BuildMaster's Active_Indicator: an inactive script is kept but left out of runs
  active INTEGER NOT NULL DEFAULT 1 CHECK (active IN (0, 1)),
  -- BuildMaster's Script_Guid: stays with the script through renames and moves between releases
  guid TEXT NOT NULL UNIQUE,
  created_by TEXT NOT NULL,
  created_on TEXT NOT NULL,
  modified_by TEXT NOT NULL,
  modified_on TEXT NOT NULL,
  UNIQUE (release_id, name_key)
) STRICT;
