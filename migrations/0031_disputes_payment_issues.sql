-- Disputes (docs/disputes.md): a chargeback the rail reports on a paid charge or an approved
-- payment. The disputed amount is held in the ledger (hold → company_held, source 'dispute') while
-- the dispute is open; won releases it, lost pays it out for good. A charge or payment is disputed
-- at most once; the rail's own reference makes a repeated report the same dispute.

CREATE TABLE disputes (
  company_id text NOT NULL REFERENCES companies(id),
  environment text NOT NULL CHECK (environment IN ('test', 'live')),
  id text NOT NULL,
  status text NOT NULL CHECK (status IN ('needs_response', 'won', 'lost')),
  charge_id text,
  payment_id text,
  -- The payment's attempt the rail disputed (payments only).
  intent_id text,
  amount bigint NOT NULL CHECK (amount > 0),
  currency text NOT NULL,
  reason text NOT NULL,
  rail text NOT NULL,
  rail_dispute_id text NOT NULL,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  closed_at timestamptz,
  PRIMARY KEY (company_id, environment, id),
  CONSTRAINT disputes_one_subject CHECK ((charge_id IS NULL) <> (payment_id IS NULL))
);
CREATE UNIQUE INDEX disputes_id ON disputes (id);
CREATE UNIQUE INDEX disputes_rail_reference ON disputes (company_id, environment, rail, rail_dispute_id);
CREATE UNIQUE INDEX disputes_charge ON disputes (company_id, environment, charge_id) WHERE charge_id IS NOT NULL;
CREATE UNIQUE INDEX disputes_payment ON disputes (company_id, environment, payment_id) WHERE payment_id IS NOT NULL;
CREATE INDEX disputes_list ON disputes (company_id, environment, created_at, id);

-- The charge names its dispute (the charges module writes it, in the dispute's transaction).
ALTER TABLE charges ADD COLUMN dispute_id text;

-- Problems of a payment that need a person (payment.issue, docs/payments.md "payment.issue"):
-- one row per (attempt, code), so a rail repeating itself raises the issue once.
CREATE TABLE payment_issues (
  company_id text NOT NULL REFERENCES companies(id),
  environment text NOT NULL CHECK (environment IN ('test', 'live')),
  id text NOT NULL,
  payment_id text NOT NULL,
  intent_id text NOT NULL,
  code text NOT NULL CHECK (code IN ('late_approval')),
  amount bigint NOT NULL,
  currency text NOT NULL,
  message text NOT NULL,
  created_at timestamptz NOT NULL,
  PRIMARY KEY (company_id, environment, id)
);
CREATE UNIQUE INDEX payment_issues_once ON payment_issues (company_id, environment, intent_id, code);
CREATE INDEX payment_issues_payment ON payment_issues (company_id, environment, payment_id, created_at);
