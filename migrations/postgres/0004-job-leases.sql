-- Cluster mode: which node runs an executing job, and until when it has promised to say so.
-- PostgreSQL only: SQLite's single runner takes every executing row at its start for an orphan;
-- nodes of a cluster cannot, since another node's executing jobs are alive. A node renews its
-- leases while it runs them; a lease that lapses (its node died or lost the database) makes the
-- job failed by the restart rule, never run again (storage/postgres/job-claims.ts).
CREATE TABLE job_leases (
  job_id bigint PRIMARY KEY REFERENCES jobs (id) ON DELETE CASCADE,
  node_id text NOT NULL,
  -- the database's clock, so that the nodes' clocks need not agree
  lease_until timestamptz NOT NULL
);
CREATE INDEX job_leases_lease_until ON job_leases (lease_until);
-- No wharf_changes trigger: no cache reads leases, and renewing them every few seconds would
-- empty every node's caches as often.
