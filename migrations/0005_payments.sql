-- Payments (collection links), their payment intents (attempts) and the message-template catalogue.
-- Money columns are integer minor units (centavos); the API speaks pesos.

-- A global catalogue, like banks: upserted at start, never deleted (payments point at it).
CREATE TABLE message_templates (
  id text PRIMARY KEY,
  name text NOT NULL,
  status text NOT NULL,
  stage text NOT NULL,
  provider text NOT NULL,
  predefined boolean NOT NULL,
  selectable boolean NOT NULL,
  body text NOT NULL,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL
);

CREATE TABLE payments (
  company_id text NOT NULL REFERENCES companies(id),
  environment text NOT NULL,
  id text NOT NULL,
  status text NOT NULL CHECK (status IN ('pending', 'in_progress', 'declined', 'approved', 'paid_externally', 'cancelled', 'expired', 'refunded', 'disputed', 'partially_paid')),
  -- 'api' for payments created here; 'utility' for utility-service invoices (never cancellable, 15001).
  source text NOT NULL DEFAULT 'api',
  title text NOT NULL,
  description text,
  currency text NOT NULL CHECK (currency IN ('COP', 'USD', 'MXN')),
  -- NULL: an open-amount link (the payer chooses the amount).
  amount bigint CHECK (amount > 0),
  amount_paid bigint NOT NULL DEFAULT 0 CHECK (amount_paid >= 0),
  partial_enabled boolean NOT NULL DEFAULT false,
  partial_minimum bigint,
  reference text,
  external_id text,
  phone text,
  email text,
  channel text NOT NULL CHECK (channel IN ('messaging', 'email', 'portal', 'manual')),
  template_id text,
  target_wallet_id text,
  target_wallet_company_id text,
  -- [{account_id, wallet_id, amount (minor units) | null, percentage_bp | null}]
  splits jsonb NOT NULL DEFAULT '[]',
  document_url text,
  tax_rate_bp integer,
  tax_amount bigint,
  allows jsonb NOT NULL,
  rtkey_expires_in integer,
  expires_at timestamptz,
  redirect_url text,
  metadata jsonb,
  test_scenario text,
  resend_count integer NOT NULL DEFAULT 0,
  last_resent_at timestamptz,
  cancel_notify boolean,
  paid_at timestamptz,
  cancelled_at timestamptz,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (company_id, environment, id)
);
CREATE UNIQUE INDEX payments_id ON payments (id);
CREATE INDEX payments_list ON payments (company_id, environment, created_at, id);
CREATE INDEX payments_paid ON payments (company_id, environment, paid_at, id);
CREATE INDEX payments_reference ON payments (company_id, environment, reference);
CREATE INDEX payments_external_id ON payments (company_id, environment, external_id);

-- One row per attempt to pay a payment (a payer on the page, a rail's charge, a sandbox resolve).
CREATE TABLE payment_intents (
  company_id text NOT NULL,
  environment text NOT NULL,
  id text NOT NULL,
  payment_id text NOT NULL,
  status text NOT NULL CHECK (status IN ('in_progress', 'approved', 'declined')),
  method text NOT NULL,
  amount bigint NOT NULL CHECK (amount > 0),
  currency text NOT NULL,
  remarks text,
  external_id text,
  network_id text,
  charge_id text,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  paid_at timestamptz,
  PRIMARY KEY (company_id, environment, id),
  FOREIGN KEY (company_id, environment, payment_id) REFERENCES payments (company_id, environment, id)
);
CREATE UNIQUE INDEX payment_intents_id ON payment_intents (id);
CREATE UNIQUE INDEX payment_intents_charge ON payment_intents (charge_id) WHERE charge_id IS NOT NULL;
-- At most one open attempt per payment, whatever the application does.
CREATE UNIQUE INDEX payment_intents_one_open ON payment_intents (company_id, environment, payment_id) WHERE status = 'in_progress';
CREATE INDEX payment_intents_payment ON payment_intents (company_id, environment, payment_id, created_at, id);
CREATE INDEX payment_intents_list ON payment_intents (company_id, environment, created_at, id);
