-- The double-entry ledger behind balances (docs/ledger.md): accounts, transactions and immutable
-- entries. Amounts are signed integer minor units (bigint); the balance of an account is the sum
-- of its entries, positive when Recaudo holds that money for the account's holder.

CREATE TABLE ledger_accounts (
  company_id text NOT NULL REFERENCES companies(id),
  environment text NOT NULL CHECK (environment IN ('test', 'live')),
  id text NOT NULL,
  kind text NOT NULL CHECK (kind IN ('company_available', 'company_pending', 'wallet', 'external_clearing')),
  currency text NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
  -- Cache of SUM(ledger_entries.amount) of this account, written in the same transaction as the
  -- entries (src/modules/ledger/service.ts) and audited against them by the tests.
  balance bigint NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (company_id, environment, id),
  -- Only the clearing account (the world outside Recaudo) may go below zero.
  CONSTRAINT ledger_accounts_non_negative CHECK (kind = 'external_clearing' OR balance >= 0)
);
CREATE UNIQUE INDEX ledger_accounts_id ON ledger_accounts (id);
-- One account per holder, kind and currency: the get-or-create key (INSERT ... ON CONFLICT DO NOTHING).
CREATE UNIQUE INDEX ledger_accounts_key ON ledger_accounts (company_id, environment, kind, currency);

CREATE TABLE ledger_transactions (
  company_id text NOT NULL REFERENCES companies(id),
  environment text NOT NULL CHECK (environment IN ('test', 'live')),
  id text NOT NULL,
  kind text NOT NULL CHECK (kind IN ('collection', 'settlement', 'split', 'refund', 'payout', 'reversal')),
  currency text NOT NULL,
  -- The business event the transaction records (a payment intent, a charge, a refund...).
  source_type text NOT NULL,
  source_id text NOT NULL,
  created_at timestamptz NOT NULL,
  PRIMARY KEY (company_id, environment, id)
);
CREATE UNIQUE INDEX ledger_transactions_id ON ledger_transactions (id);
-- The same business event never posts twice (idempotent posting).
CREATE UNIQUE INDEX ledger_transactions_source ON ledger_transactions (company_id, environment, kind, source_type, source_id);
CREATE INDEX ledger_transactions_list ON ledger_transactions (company_id, environment, created_at, id);

CREATE TABLE ledger_entries (
  company_id text NOT NULL,
  environment text NOT NULL,
  id text NOT NULL,
  transaction_id text NOT NULL,
  -- May belong to another company's books only for a WALLET account (splits).
  account_id text NOT NULL REFERENCES ledger_accounts (id),
  amount bigint NOT NULL CHECK (amount <> 0),
  currency text NOT NULL,
  created_at timestamptz NOT NULL,
  PRIMARY KEY (company_id, environment, id),
  FOREIGN KEY (company_id, environment, transaction_id) REFERENCES ledger_transactions (company_id, environment, id)
);
CREATE INDEX ledger_entries_transaction ON ledger_entries (company_id, environment, transaction_id);
CREATE INDEX ledger_entries_account ON ledger_entries (account_id, created_at, id);

-- Entries and transactions are immutable: corrections are new (reversal) transactions.
CREATE FUNCTION ledger_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'ledger rows are immutable: % on % is not allowed', TG_OP, TG_TABLE_NAME USING ERRCODE = 'restrict_violation';
END;
$$;
CREATE TRIGGER ledger_entries_immutable BEFORE UPDATE OR DELETE ON ledger_entries FOR EACH ROW EXECUTE FUNCTION ledger_immutable();
CREATE TRIGGER ledger_entries_no_truncate BEFORE TRUNCATE ON ledger_entries FOR EACH STATEMENT EXECUTE FUNCTION ledger_immutable();
CREATE TRIGGER ledger_transactions_immutable BEFORE UPDATE OR DELETE ON ledger_transactions FOR EACH ROW EXECUTE FUNCTION ledger_immutable();
CREATE TRIGGER ledger_transactions_no_truncate BEFORE TRUNCATE ON ledger_transactions FOR EACH STATEMENT EXECUTE FUNCTION ledger_immutable();
CREATE TRIGGER ledger_accounts_no_delete BEFORE DELETE ON ledger_accounts FOR EACH ROW EXECUTE FUNCTION ledger_immutable();

-- Money is never created or destroyed: the entries written by one statement sum to zero per
-- transaction, and each entry's currency and environment are its transaction's and its account's.
-- (The service writes all the entries of a transaction in one INSERT.)
CREATE FUNCTION ledger_entries_check() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  bad text;
BEGIN
  SELECT n.transaction_id INTO bad FROM new_entries n GROUP BY n.transaction_id HAVING SUM(n.amount) <> 0 LIMIT 1;
  IF bad IS NOT NULL THEN
    RAISE EXCEPTION 'ledger transaction % is not balanced', bad USING ERRCODE = 'check_violation';
  END IF;
  SELECT n.id INTO bad
    FROM new_entries n
    JOIN ledger_accounts a ON a.id = n.account_id
    JOIN ledger_transactions t ON t.company_id = n.company_id AND t.environment = n.environment AND t.id = n.transaction_id
   WHERE a.currency <> n.currency OR t.currency <> n.currency OR a.environment <> n.environment
   LIMIT 1;
  IF bad IS NOT NULL THEN
    RAISE EXCEPTION 'ledger entry % does not match its account or transaction', bad USING ERRCODE = 'check_violation';
  END IF;
  RETURN NULL;
END;
$$;
CREATE TRIGGER ledger_entries_balanced AFTER INSERT ON ledger_entries REFERENCING NEW TABLE AS new_entries FOR EACH STATEMENT EXECUTE FUNCTION ledger_entries_check();
