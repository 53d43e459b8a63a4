-- Cards, single-use card tokens, charges and their refunds (docs/charges.md).
-- No column ever holds a full card number or a security code: a card keeps its brand, last four
-- digits, expiry, holder, a keyed fingerprint (HMAC) and the sandbox outcome class of its number.
-- Money columns are integer minor units (centavos); the API speaks pesos.

CREATE TABLE cards (
  company_id text NOT NULL REFERENCES companies(id),
  environment text NOT NULL CHECK (environment IN ('test', 'live')),
  id text NOT NULL,
  customer_id uuid NOT NULL,
  brand text NOT NULL,
  last4 text NOT NULL CHECK (last4 ~ '^[0-9]{4}$'),
  exp_month smallint NOT NULL CHECK (exp_month BETWEEN 1 AND 12),
  exp_year integer NOT NULL CHECK (exp_year BETWEEN 2000 AND 2200),
  holder_name text NOT NULL,
  -- HMAC-SHA256 of the company and the card number, keyed with CARD_DATA_SECRET.
  fingerprint text NOT NULL,
  "authorization" boolean NOT NULL,
  -- How the (sandbox) card processor answers a debit on this card: approved, or a decline reason.
  outcome_class text NOT NULL,
  -- 'api' (POST /cards) or 'token' (POST /cards/tokenized).
  source text NOT NULL,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  deleted_at timestamptz,
  PRIMARY KEY (company_id, environment, id)
);
CREATE UNIQUE INDEX cards_id ON cards (id);
CREATE INDEX cards_list ON cards (company_id, environment, created_at, id) WHERE deleted_at IS NULL;
CREATE INDEX cards_customer ON cards (company_id, environment, customer_id, created_at, id) WHERE deleted_at IS NULL;

-- POST /tokens (publishable key): what a card needs, for 10 minutes, usable once.
CREATE TABLE card_tokens (
  company_id text NOT NULL REFERENCES companies(id),
  environment text NOT NULL CHECK (environment IN ('test', 'live')),
  id text NOT NULL,
  brand text NOT NULL,
  last4 text NOT NULL CHECK (last4 ~ '^[0-9]{4}$'),
  exp_month smallint NOT NULL CHECK (exp_month BETWEEN 1 AND 12),
  exp_year integer NOT NULL CHECK (exp_year BETWEEN 2000 AND 2200),
  holder_name text NOT NULL,
  fingerprint text NOT NULL,
  outcome_class text NOT NULL,
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  used_at timestamptz,
  card_id text,
  PRIMARY KEY (company_id, environment, id)
);
CREATE UNIQUE INDEX card_tokens_id ON card_tokens (id);
CREATE INDEX card_tokens_expiry ON card_tokens (expires_at);

CREATE TABLE charges (
  company_id text NOT NULL REFERENCES companies(id),
  environment text NOT NULL CHECK (environment IN ('test', 'live')),
  id text NOT NULL,
  status text NOT NULL CHECK (status IN ('created', 'processing', 'paid', 'failed', 'refunded')),
  title text NOT NULL,
  currency text NOT NULL CHECK (currency IN ('COP', 'USD', 'MXN')),
  amount bigint NOT NULL CHECK (amount > 0),
  customer_id uuid NOT NULL,
  payment_method_type text NOT NULL CHECK (payment_method_type IN ('card', 'account')),
  account_id uuid,
  card_id text,
  external_id text,
  -- The x-idempotency value the charge was created with (filter[key]).
  idempotency_key text,
  -- [{account_id, wallet_id (company), amount (minor units) | null, percentage_bp | null}]
  splits jsonb NOT NULL DEFAULT '[]',
  metadata jsonb,
  test_scenario text,
  remarks text,
  -- The rail's reference of the debit (the sandbox's too).
  network_id text,
  -- The payment intent recorded for this attempt (GET /payment-intents/{charge_id}).
  intent_id text NOT NULL,
  -- The outcome was set by POST /charges/{id}/resolve (a simulated test outcome, not a rail's).
  resolved boolean NOT NULL DEFAULT false,
  paid_at timestamptz,
  failed_at timestamptz,
  cancelled_at timestamptz,
  refunded_at timestamptz,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (company_id, environment, id),
  CHECK ((account_id IS NULL) <> (card_id IS NULL))
);
CREATE UNIQUE INDEX charges_id ON charges (id);
CREATE UNIQUE INDEX charges_intent ON charges (intent_id);
CREATE INDEX charges_list ON charges (company_id, environment, created_at, id);
CREATE INDEX charges_paid ON charges (company_id, environment, paid_at, id);
CREATE INDEX charges_external_id ON charges (company_id, environment, external_id);
CREATE INDEX charges_customer ON charges (company_id, environment, customer_id, created_at, id);
CREATE INDEX charges_key ON charges (company_id, environment, idempotency_key);

CREATE TABLE charge_refunds (
  company_id text NOT NULL REFERENCES companies(id),
  environment text NOT NULL CHECK (environment IN ('test', 'live')),
  id text NOT NULL,
  charge_id text NOT NULL,
  -- pending: recorded and sent to the rail; succeeded: the rail confirmed it (the reconciler retries until it does).
  status text NOT NULL CHECK (status IN ('pending', 'succeeded')),
  amount bigint NOT NULL CHECK (amount > 0),
  currency text NOT NULL,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  succeeded_at timestamptz,
  PRIMARY KEY (company_id, environment, id),
  FOREIGN KEY (company_id, environment, charge_id) REFERENCES charges (company_id, environment, id)
);
CREATE UNIQUE INDEX charge_refunds_id ON charge_refunds (id);
-- A charge is refunded at most once (a whole refund), whatever the application does.
CREATE UNIQUE INDEX charge_refunds_one ON charge_refunds (company_id, environment, charge_id);

-- Every charge is one attempt, recorded as a payment intent without a payment.
ALTER TABLE payment_intents ALTER COLUMN payment_id DROP NOT NULL;
