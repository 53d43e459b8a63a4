-- Recurring billing (docs/subscriptions.md): plans, subscriptions and one row per billed cycle.
-- Amounts in minor units (cents); due dates computed in America/Bogota from the anchor date.

CREATE TABLE plans (
  company_id text NOT NULL REFERENCES companies(id),
  environment text NOT NULL CHECK (environment IN ('test', 'live')),
  id text NOT NULL PRIMARY KEY,
  name text NOT NULL,
  description text,
  internal_id text,
  currency text NOT NULL,
  amount bigint NOT NULL CHECK (amount > 0),
  reference_price bigint,
  frequency text NOT NULL,
  -- null: unbounded.
  cycles integer CHECK (cycles IS NULL OR cycles > 0),
  trial_days integer NOT NULL DEFAULT 0 CHECK (trial_days >= 0),
  complex_payments jsonb NOT NULL DEFAULT '[]',
  allows jsonb,
  metadata jsonb,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL
);
CREATE INDEX plans_tenant_created ON plans (company_id, environment, created_at, id);

CREATE TABLE subscriptions (
  company_id text NOT NULL REFERENCES companies(id),
  environment text NOT NULL CHECK (environment IN ('test', 'live')),
  id text NOT NULL PRIMARY KEY,
  customer_id text NOT NULL,
  plan_id text,
  status text NOT NULL CHECK (status IN ('created', 'active', 'pass_due', 'unpaid', 'canceled', 'finished', 'frozen')),
  -- Bumped by every status change: receivers order subscription.* events by it.
  version integer NOT NULL DEFAULT 0,
  name text NOT NULL,
  description text,
  internal_id text,
  currency text NOT NULL,
  amount bigint NOT NULL CHECK (amount > 0),
  reference_price bigint,
  frequency text NOT NULL,
  cycles integer CHECK (cycles IS NULL OR cycles > 0),
  payment_mode text NOT NULL CHECK (payment_mode IN ('request', 'auto_debit')),
  -- The Bogotá date of the first due cycle (after the trial), YYYY-MM-DD.
  anchor_date text NOT NULL,
  start_date text NOT NULL,
  trial_days integer NOT NULL DEFAULT 0,
  trial_ends_at timestamptz,
  remember_to_pay_before integer NOT NULL,
  cancel_after_no_payment_before integer NOT NULL,
  complex_payments jsonb NOT NULL DEFAULT '[]',
  allows jsonb,
  metadata jsonb,
  -- The number of the last cycle billed (0: none yet).
  current_cycle integer NOT NULL DEFAULT 0,
  -- Consecutive cycles left unpaid at their due date.
  unpaid_cycles integer NOT NULL DEFAULT 0,
  -- Periods skipped while frozen: cycle n is due at period (n - 1 + period_offset) of the anchor.
  period_offset integer NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  canceled_at timestamptz,
  finished_at timestamptz,
  frozen_at timestamptz
);
CREATE INDEX subscriptions_tenant_created ON subscriptions (company_id, environment, created_at, id);
CREATE INDEX subscriptions_tenant_customer ON subscriptions (company_id, environment, customer_id);
CREATE INDEX subscriptions_tenant_plan ON subscriptions (company_id, environment, plan_id);

-- One row per billed cycle: the primary key makes a second worker (or a retry after a crash)
-- unable to bill a cycle twice.
CREATE TABLE subscription_cycles (
  company_id text NOT NULL,
  environment text NOT NULL,
  subscription_id text NOT NULL REFERENCES subscriptions(id),
  cycle integer NOT NULL CHECK (cycle > 0),
  due_at timestamptz NOT NULL,
  amount bigint NOT NULL,
  payment_id text,
  status text NOT NULL CHECK (status IN ('open', 'paid', 'void')),
  paid_at timestamptz,
  created_at timestamptz NOT NULL,
  PRIMARY KEY (subscription_id, cycle)
);
CREATE UNIQUE INDEX subscription_cycles_payment ON subscription_cycles (payment_id) WHERE payment_id IS NOT NULL;

ALTER TABLE payments ADD COLUMN subscription_id text;
ALTER TABLE payments ADD COLUMN cycle integer;
