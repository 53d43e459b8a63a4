-- Consent on payment-page attempts (docs/pages.md "Consent"): before paying through a provider
-- (a connector's card, PSE or Nequi), the payer accepts the provider's two contracts, the end-user
-- terms and the personal-data authorization (Ley 1581 de 2012). The attempt records which
-- documents (their permalinks, as the provider published them) and when: all three or none. The
-- check is NOT VALID: rows older than this migration have none, so nothing needs scanning.
ALTER TABLE payment_intents ADD COLUMN consent_terms_permalink text;
ALTER TABLE payment_intents ADD COLUMN consent_personal_data_permalink text;
ALTER TABLE payment_intents ADD COLUMN consent_accepted_at timestamptz;
ALTER TABLE payment_intents ADD CONSTRAINT payment_intents_consent_whole CHECK (
  (consent_terms_permalink IS NULL AND consent_personal_data_permalink IS NULL AND consent_accepted_at IS NULL)
  OR (consent_terms_permalink IS NOT NULL AND consent_personal_data_permalink IS NOT NULL AND consent_accepted_at IS NOT NULL)
) NOT VALID;
