-- Exactly once per idempotency key (docs/platform.md "Retries after a failure").
-- A claim committed before an outside call (a charge, a refund, a rail registration) names the
-- resource it recorded and how long its request is presumed alive. Such a claim is never deleted
-- by a failure: a retry of the key waits for the request while it holds the claim, then answers
-- the recorded resource as it is now. It never runs the operation (or calls the rail) again.
ALTER TABLE idempotency_keys ADD COLUMN resource_id text;
ALTER TABLE idempotency_keys ADD COLUMN held_until timestamptz;

-- A second open charge for one key is impossible, whatever the application does: the charge and
-- its claim commit together, and this index refuses a twin while the first is still open.
CREATE UNIQUE INDEX charges_open_idempotency_key ON charges (company_id, environment, idempotency_key)
  WHERE idempotency_key IS NOT NULL AND status IN ('created', 'processing');
