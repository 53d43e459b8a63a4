-- Connectors (docs/connectors.md): a company's settings of a real payment provider per
-- environment, the provider's events as received, and where a saved card lives at the provider.
-- Secrets are sealed with SECRETS_KEY (src/platform/secrets.ts); the public key is not a secret.
CREATE TABLE connector_settings (
  company_id text NOT NULL REFERENCES companies(id),
  environment text NOT NULL CHECK (environment IN ('test', 'live')),
  name text NOT NULL,
  provider_environment text NOT NULL CHECK (provider_environment IN ('sandbox', 'production')),
  public_key text NOT NULL,
  private_key_sealed text NOT NULL,
  events_secret_sealed text NOT NULL,
  integrity_secret_sealed text NOT NULL,
  -- The last four characters of each secret, for the write-only summary.
  secret_hints text NOT NULL,
  rails text NOT NULL,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (company_id, environment, name)
);

-- Every event posted to /v1/rails/{name}/events: verified or refused (a bad checksum), and why.
CREATE TABLE connector_events (
  id text PRIMARY KEY,
  connector text NOT NULL,
  company_id text,
  environment text,
  event text,
  reference text,
  provider_id text,
  provider_status text,
  verified boolean NOT NULL,
  problem text,
  received_at timestamptz NOT NULL
);
CREATE INDEX connector_events_tenant ON connector_events (company_id, environment, connector, received_at DESC);

-- The connector's opaque reference to a card saved at the provider (null: saved without one), and
-- the provider's terms the payer accepted with it.
ALTER TABLE cards ADD COLUMN rail_source text;
ALTER TABLE cards ADD COLUMN rail_acceptance text;
-- A token made while a connector served cards: the provider's own token for the same card.
ALTER TABLE card_tokens ADD COLUMN rail_token text;
-- A card charge's monthly installments as the payer chose them (null: 1), kept so a reconciler
-- that submits the charge again asks for the same.
ALTER TABLE charges ADD COLUMN installments smallint CHECK (installments BETWEEN 1 AND 36);
-- Where the rail sends the payer when it is not Recaudo's own page (a PSE bank session's URL at
-- the provider); the charge's `url` is this when set.
ALTER TABLE charges ADD COLUMN rail_url text;
