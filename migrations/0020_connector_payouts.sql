-- Wompi's Third-Party Payments (the payout rail, docs/connectors.md "Payouts"): a product apart
-- from the payments API, with its own API key, principal user id and events secret (sealed with
-- SECRETS_KEY like the other secrets) and the origin account payouts are sent from.
ALTER TABLE connector_settings ADD COLUMN payouts_api_key_sealed text;
ALTER TABLE connector_settings ADD COLUMN payouts_principal_id_sealed text;
ALTER TABLE connector_settings ADD COLUMN payouts_events_secret_sealed text;
ALTER TABLE connector_settings ADD COLUMN payouts_account_id text;

-- The provider's payout events name its transaction, not the cash-out: found by network_id.
CREATE INDEX cashouts_network_id ON cashouts (network_id) WHERE network_id IS NOT NULL;
