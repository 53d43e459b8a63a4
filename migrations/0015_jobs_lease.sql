-- Jobs (src/platform/jobs, docs/architecture.md "Jobs"): a job is leased only while it runs and its
-- lease is renewed while it does; each claim gets its own token, and the runner completes or fails
-- the job only while it still holds that token, so a runner whose lease was taken over can never
-- overwrite the new holder's work. A job out of attempts is dead: dead_at is set (locked_until stays
-- far in the future so it is never claimed), listed by `recaudo jobs list --dead`, counted in
-- /metrics, and put back in the queue by `recaudo jobs retry ID`.
ALTER TABLE jobs ADD COLUMN lease_token text;
ALTER TABLE jobs ADD COLUMN dead_at timestamptz;
UPDATE jobs SET dead_at = now() WHERE locked_until >= '9999-01-01';
CREATE INDEX jobs_dead ON jobs (kind) WHERE dead_at IS NOT NULL;
