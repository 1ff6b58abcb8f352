-- Retention of asset directories (issue 17 section 1): "not downloaded for D days" needs to know
-- when each file was last downloaded. Stamped by the file download route through a batched writer
-- (areas/endpoints/download-times.ts) at most once a minute per file, as a quiet write that moves
-- no cache: a busy file costs one small UPDATE a minute, not one per download.
-- NULL: never downloaded since this column exists (retention then goes by modified_at).
ALTER TABLE asset_items ADD COLUMN last_downloaded_at TEXT;
