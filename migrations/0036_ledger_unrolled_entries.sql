-- Credits without a lock on the hot balance rows (issue 18 part 4; docs/ledger.md "Hot accounts:
-- credits without a lock"). `ledger_accounts.balance` becomes the ROLLED-UP part of an account's
-- balance: an entry that cannot take an account below zero (a credit of a non-negative account,
-- any entry of external_clearing) is written with its transaction and recorded here instead of
-- being added to the account row, so concurrent collections of one company never wait for each
-- other. The roll-up (a debit of the account, or the background job) folds these rows into
-- `ledger_accounts.balance` under the account's row lock and deletes them, in one statement.
-- The balance of an account is always `ledger_accounts.balance` + the sum of its rows here.
CREATE TABLE ledger_unrolled_entries (
  -- The ACCOUNT's company (a split's wallet credit lives in the receiving company's books, as its
  -- account does), so a roll-up touches one company's rows only.
  company_id text NOT NULL,
  environment text NOT NULL CHECK (environment IN ('test', 'live')),
  account_id text NOT NULL,
  -- The ledger entry this amount comes from (same account, same amount). No foreign key: the
  -- entry belongs to the POSTING company's books, which for a split is another company (no
  -- co-located key once tables are distributed by company); auditLedger checks the match.
  entry_id text NOT NULL,
  amount bigint NOT NULL CHECK (amount <> 0),
  PRIMARY KEY (company_id, environment, account_id, entry_id),
  FOREIGN KEY (company_id, environment, account_id) REFERENCES ledger_accounts (company_id, environment, id)
);

-- The exact balance of every account, as one statement sees it: the rolled-up part plus the
-- entries not rolled up yet. Every reader of balances goes through this view (or the ledger
-- service functions built on it); `ledger_accounts.balance` alone lags behind by the unrolled credits.
CREATE VIEW ledger_account_balances AS
SELECT a.company_id, a.environment, a.id, a.kind, a.holder, a.currency,
       (a.balance + COALESCE((SELECT sum(u.amount) FROM ledger_unrolled_entries u
                               WHERE u.company_id = a.company_id AND u.environment = a.environment AND u.account_id = a.id), 0))::bigint AS balance,
       a.balance AS rolled_up_balance
  FROM ledger_accounts a;
