-- Test clocks (docs/subscriptions.md "Test clocks"): simulated time for test customers. Jobs bound
-- to a clock wait parked (run_at far ahead) until the clock is advanced past their clock_at.

CREATE TABLE test_clocks (
  company_id text NOT NULL REFERENCES companies(id),
  environment text NOT NULL CHECK (environment = 'test'),
  id text NOT NULL PRIMARY KEY,
  name text,
  frozen_time timestamptz NOT NULL,
  status text NOT NULL CHECK (status IN ('ready', 'advancing')),
  advance_to timestamptz,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  deleted_at timestamptz
);
CREATE INDEX test_clocks_tenant_created ON test_clocks (company_id, environment, created_at, id) WHERE deleted_at IS NULL;

ALTER TABLE customers ADD COLUMN test_clock text;
ALTER TABLE subscriptions ADD COLUMN test_clock text;

ALTER TABLE jobs ADD COLUMN clock_id text;
ALTER TABLE jobs ADD COLUMN clock_at timestamptz;
CREATE INDEX jobs_clock ON jobs (clock_id, clock_at) WHERE clock_id IS NOT NULL;
