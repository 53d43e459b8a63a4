-- auto_debit subscriptions (docs/subscriptions.md "Automatic debit"): the charge of a cycle's
-- current debit attempt, and how many attempts were made.
ALTER TABLE subscription_cycles ADD COLUMN charge_id text;
ALTER TABLE subscription_cycles ADD COLUMN debit_attempts integer NOT NULL DEFAULT 0;
CREATE UNIQUE INDEX subscription_cycles_charge ON subscription_cycles (charge_id) WHERE charge_id IS NOT NULL;
