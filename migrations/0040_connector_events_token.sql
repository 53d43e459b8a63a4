-- Each company's own events URLs (docs/connectors.md "Events"): /v1/rails/wompi/events/{token} and
-- /v1/rails/wompi/payout-events/{token}. The token names the company and environment whose
-- secrets verify an event, so nothing unsigned in an event ever picks the tenant. Settings written
-- before this release get a token here (their connector answer shows the new URLs).
ALTER TABLE connector_settings ADD COLUMN events_token text;
UPDATE connector_settings
SET events_token = 'cet_' || md5(random()::text || clock_timestamp()::text || company_id || environment || name)
WHERE events_token IS NULL;
ALTER TABLE connector_settings ALTER COLUMN events_token SET NOT NULL;
-- A global lookup (the provider posts to the URL): see GLOBAL_UNIQUE_KEYS in src/platform/db/distribution.ts.
CREATE UNIQUE INDEX connector_settings_events_token ON connector_settings (events_token);

-- The payer's consent to a provider's contracts (terms and personal-data authorization, Ley 1581
-- de 2012) on a live banklink or wallet charge through a connector: who asserted it and when
-- (accept_terms, docs/connectors.md "Consent").
ALTER TABLE charges ADD COLUMN provider_consent text;

-- A refund the provider refuses (a void it no longer accepts) ends failed with its reason and the
-- money back in the balance (docs/charges.md "Refunds"); the company may then refund again, so at
-- most one refund per charge is pending or succeeded at a time.
ALTER TABLE charge_refunds DROP CONSTRAINT IF EXISTS charge_refunds_status_check;
ALTER TABLE charge_refunds ADD CONSTRAINT charge_refunds_status_check CHECK (status IN ('pending', 'succeeded', 'failed'));
ALTER TABLE charge_refunds ADD COLUMN failed_at timestamptz;
ALTER TABLE charge_refunds ADD COLUMN failure_reason text;
DROP INDEX charge_refunds_one;
CREATE UNIQUE INDEX charge_refunds_one ON charge_refunds (company_id, environment, charge_id) WHERE status <> 'failed';
