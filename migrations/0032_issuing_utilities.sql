-- Issuing cards (docs/issuing.md) and utilities, bill payments (docs/utilities.md).

-- A card issued for a customer, spending from the customer's wallet. Never a full card number or
-- security code: the issuer keeps them; Recaudo has the last four digits, brand and expiry.
CREATE TABLE issuing_cards (
  company_id text NOT NULL REFERENCES companies(id),
  environment text NOT NULL CHECK (environment IN ('test', 'live')),
  id text NOT NULL,
  customer_id uuid NOT NULL,
  status text NOT NULL CHECK (status IN ('created', 'active', 'blocked', 'canceled')),
  type text NOT NULL CHECK (type IN ('virtual', 'physical')),
  nickname text,
  address jsonb,
  brand text,
  last_4 text CHECK (last_4 ~ '^[0-9]{4}$'),
  exp_month integer CHECK (exp_month BETWEEN 1 AND 12),
  exp_year integer,
  network_id text,
  remarks text,
  metadata jsonb,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  activated_at timestamptz,
  canceled_at timestamptz,
  PRIMARY KEY (company_id, environment, id),
  FOREIGN KEY (company_id, environment, customer_id) REFERENCES customers (company_id, environment, id)
);
CREATE UNIQUE INDEX issuing_cards_id ON issuing_cards (id);
CREATE INDEX issuing_cards_list ON issuing_cards (company_id, environment, created_at, id);
CREATE INDEX issuing_cards_customer ON issuing_cards (company_id, environment, customer_id, created_at, id);

-- An approved spend on a card (sandbox: POST /issuing/cards/{id}/test-authorizations): it took
-- the amount out of the customer's wallet in the same transaction (ledger_transaction_id). A
-- refused one (the wallet short, the card not active) records nothing.
CREATE TABLE issuing_authorizations (
  company_id text NOT NULL REFERENCES companies(id),
  environment text NOT NULL CHECK (environment IN ('test', 'live')),
  id text NOT NULL,
  card_id text NOT NULL,
  customer_id uuid NOT NULL,
  amount bigint NOT NULL CHECK (amount > 0),
  currency text NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
  merchant_name text NOT NULL,
  ledger_transaction_id text NOT NULL,
  created_at timestamptz NOT NULL,
  PRIMARY KEY (company_id, environment, id),
  FOREIGN KEY (company_id, environment, card_id) REFERENCES issuing_cards (company_id, environment, id)
);
CREATE UNIQUE INDEX issuing_authorizations_id ON issuing_authorizations (id);
CREATE INDEX issuing_authorizations_card ON issuing_authorizations (company_id, environment, card_id, created_at, id);

-- A wallet movement may belong to a card spend (withdrawal, node IssuingAuthorization).
ALTER TABLE wallet_transactions DROP CONSTRAINT wallet_transactions_node_type_check;
ALTER TABLE wallet_transactions ADD CONSTRAINT wallet_transactions_node_type_check
  CHECK (node_type IN ('CashoutLine', 'IssuingAuthorization'));

-- A bill paid from the company's balance through the biller rail (POST /utilities), or by a
-- utility payment link once its payment was approved (payment_id).
CREATE TABLE utilities (
  company_id text NOT NULL REFERENCES companies(id),
  environment text NOT NULL CHECK (environment IN ('test', 'live')),
  id text NOT NULL,
  status text NOT NULL CHECK (status IN ('created', 'processing', 'paid', 'rejected')),
  provider_id text NOT NULL,
  provider_name text NOT NULL,
  reference text NOT NULL,
  amount bigint NOT NULL CHECK (amount > 0),
  currency text NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
  due_date date,
  holder_name text,
  payment_id text,
  link_id text,
  metadata jsonb,
  remarks text,
  network_id text,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  processed_at timestamptz,
  paid_at timestamptz,
  rejected_at timestamptz,
  PRIMARY KEY (company_id, environment, id)
);
CREATE UNIQUE INDEX utilities_id ON utilities (id);
CREATE INDEX utilities_list ON utilities (company_id, environment, created_at, id);
-- One payment of a bill in flight or paid: a second one while it is is refused (409, or 422 when paid).
CREATE UNIQUE INDEX utilities_one_per_bill ON utilities (company_id, environment, provider_id, reference) WHERE status <> 'rejected';
-- A utility payment link pays its bill at most once.
CREATE UNIQUE INDEX utilities_link ON utilities (company_id, environment, link_id) WHERE link_id IS NOT NULL;

-- A utility payment link (POST /utilities/payment-links): a payment (source `utility`) the payer
-- pays; once approved, the bill is paid from the balance it fed. The payment cannot be cancelled
-- (15001 cant_cancel_payment).
CREATE TABLE utility_payment_links (
  company_id text NOT NULL REFERENCES companies(id),
  environment text NOT NULL CHECK (environment IN ('test', 'live')),
  id text NOT NULL,
  provider_id text NOT NULL,
  provider_name text NOT NULL,
  reference text NOT NULL,
  amount bigint NOT NULL CHECK (amount > 0),
  payment_id text NOT NULL,
  created_at timestamptz NOT NULL,
  PRIMARY KEY (company_id, environment, id)
);
CREATE UNIQUE INDEX utility_payment_links_id ON utility_payment_links (id);
CREATE UNIQUE INDEX utility_payment_links_payment ON utility_payment_links (company_id, environment, payment_id);
