-- Customer wallets (docs/wallets.md): the movements of each customer's wallet as the API lists
-- them. The money itself is in the ledger (a `customer_wallet` account per customer, 0017); a row
-- here is written in the same transaction as the ledger posting it describes.
CREATE TABLE wallet_transactions (
  company_id text NOT NULL REFERENCES companies(id),
  environment text NOT NULL CHECK (environment IN ('test', 'live')),
  id text NOT NULL,
  customer_id uuid NOT NULL,
  -- deposit: company balance → wallet (POST /customers/{id}/transactions); withdrawal: wallet →
  -- a cash-out; return: a withdrawal's money back in the wallet (cash-out rejected, cancelled or
  -- returned by the bank).
  type text NOT NULL CHECK (type IN ('deposit', 'withdrawal', 'return')),
  amount bigint NOT NULL CHECK (amount > 0),
  currency text NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
  concept text,
  confirmed boolean NOT NULL,
  -- What the movement belongs to: a cash-out (`CashoutLine`, node_id = co_…) or nothing (a deposit).
  node_type text CHECK (node_type IN ('CashoutLine')),
  node_id text,
  -- The ledger transaction that moved the money, when the writer knows it (deposits always).
  ledger_transaction_id text,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (company_id, environment, id),
  FOREIGN KEY (company_id, environment, customer_id) REFERENCES customers (company_id, environment, id),
  CHECK ((node_type IS NULL) = (node_id IS NULL))
);
CREATE UNIQUE INDEX wallet_transactions_id ON wallet_transactions (id);
CREATE INDEX wallet_transactions_list ON wallet_transactions (company_id, environment, customer_id, created_at, id);
-- A cash-out withdraws from a wallet at most once and returns at most once.
CREATE UNIQUE INDEX wallet_transactions_node ON wallet_transactions (company_id, environment, node_type, node_id, type) WHERE node_id IS NOT NULL;

-- balance.updated (docs/ledger.md "balance.updated"): a posting that changes a company's balances
-- opens a notice for (company, environment, currency) unless one is open; the job
-- `ledger.balance_updated` due at `due_at` closes it and emits the event with the figures then.
-- Postings share-lock an open notice (FOR KEY SHARE) so the job's DELETE waits for them to commit.
CREATE TABLE balance_notices (
  company_id text NOT NULL REFERENCES companies(id),
  environment text NOT NULL CHECK (environment IN ('test', 'live')),
  currency text NOT NULL,
  due_at timestamptz NOT NULL,
  PRIMARY KEY (company_id, environment, currency)
);

-- When the last balance.updated of (company, environment, currency) was emitted: never two within
-- a second. Written only by the job.
CREATE TABLE balance_notice_sends (
  company_id text NOT NULL REFERENCES companies(id),
  environment text NOT NULL CHECK (environment IN ('test', 'live')),
  currency text NOT NULL,
  sent_at timestamptz NOT NULL,
  PRIMARY KEY (company_id, environment, currency)
);
