-- Cash-outs (docs/cashouts.md): money out of a company's balance (or a customer's wallet) to a
-- bank account, through the payout rail. The amount is held in the ledger at creation.

CREATE TABLE cashouts (
  company_id text NOT NULL REFERENCES companies(id),
  environment text NOT NULL CHECK (environment IN ('test', 'live')),
  id text NOT NULL,
  status text NOT NULL CHECK (status IN ('created', 'require_approval', 'processing', 'completed', 'rejected', 'cancelled')),
  amount bigint NOT NULL CHECK (amount > 0),
  currency text NOT NULL,
  method text NOT NULL CHECK (method IN ('ACH', 'TURBO', 'INSTANT')),
  account_id text NOT NULL,
  customer_id text NOT NULL,
  -- `customer`: POST /cashouts; `balance`: POST /balances (the company's own account).
  origin text NOT NULL CHECK (origin IN ('customer', 'balance')),
  -- Where the money is held from: the company's available balance or the customer's wallet.
  source text NOT NULL CHECK (source IN ('company_available', 'customer_wallet')),
  external_id text,
  description text,
  remarks text,
  test_scenario text,
  idempotency_key text,
  network_id text,
  expected_arrival_at timestamptz,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  processed_at timestamptz,
  completed_at timestamptz,
  rejected_at timestamptz,
  cancelled_at timestamptz,
  PRIMARY KEY (company_id, environment, id)
);
CREATE UNIQUE INDEX cashouts_id ON cashouts (id);
CREATE UNIQUE INDEX cashouts_external_id ON cashouts (company_id, environment, external_id) WHERE external_id IS NOT NULL;
CREATE INDEX cashouts_list ON cashouts (company_id, environment, created_at, id);

-- Cash-outs above this amount (minor units) wait for approval; null: none do.
ALTER TABLE companies ADD COLUMN cashout_approval_threshold bigint CHECK (cashout_approval_threshold IS NULL OR cashout_approval_threshold > 0);

-- The company's own payout account per environment (POST /balances without account_id).
CREATE TABLE company_payout_accounts (
  company_id text NOT NULL REFERENCES companies(id),
  environment text NOT NULL CHECK (environment IN ('test', 'live')),
  account_id text NOT NULL,
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (company_id, environment)
);
