-- Money out (docs/cashouts.md): the ledger learns held money (cash-outs on their way out) and
-- customers' wallets, one account per customer (`holder`), and the transaction kinds that move them.

ALTER TABLE ledger_accounts DROP CONSTRAINT ledger_accounts_kind_check;
ALTER TABLE ledger_accounts ADD CONSTRAINT ledger_accounts_kind_check
  CHECK (kind IN ('company_available', 'company_pending', 'company_held', 'wallet', 'customer_wallet', 'external_clearing'));
-- The customer of a customer_wallet account; '' for the company's own accounts.
ALTER TABLE ledger_accounts ADD COLUMN holder text NOT NULL DEFAULT '';
ALTER TABLE ledger_accounts ADD CONSTRAINT ledger_accounts_holder CHECK ((kind = 'customer_wallet') = (holder <> ''));
DROP INDEX ledger_accounts_key;
CREATE UNIQUE INDEX ledger_accounts_key ON ledger_accounts (company_id, environment, kind, currency, holder);

ALTER TABLE ledger_transactions DROP CONSTRAINT ledger_transactions_kind_check;
ALTER TABLE ledger_transactions ADD CONSTRAINT ledger_transactions_kind_check
  CHECK (kind IN ('collection', 'settlement', 'split', 'refund', 'payout', 'reversal', 'hold', 'release', 'wallet_deposit'));
