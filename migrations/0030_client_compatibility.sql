-- Compatibility with clients written for OnePay (issue 17; docs/webhooks.md, docs/accounts.md,
-- docs/browser-tokenization.md).

-- A webhook's body format: 'standard' ({id, event, created_at, is_test, data}) or 'legacy'
-- ({"<resource>": data, "event": {type, timestamp, environment}}). A delivery keeps the format its
-- webhook had when the event was fanned out, so every attempt of it sends the same bytes.
ALTER TABLE webhooks ADD COLUMN payload_format text NOT NULL DEFAULT 'standard' CHECK (payload_format IN ('standard', 'legacy'));
ALTER TABLE webhook_deliveries ADD COLUMN payload_format text NOT NULL DEFAULT 'standard' CHECK (payload_format IN ('standard', 'legacy'));

-- What a connect link's page offers to enroll (card, banklink = a bank account, walleta = Nequi,
-- walletb = Daviplata); links made before this offer all of them.
ALTER TABLE connect_links ADD COLUMN allows jsonb NOT NULL DEFAULT '["card","banklink","walleta","walletb"]'::jsonb;

-- The browser origins allowed to call POST /v1/tokens with the company's publishable key (CORS),
-- one row per origin (scheme://host[:port], lower case, no path), per environment.
CREATE TABLE company_allowed_origins (
  company_id text NOT NULL REFERENCES companies(id),
  environment text NOT NULL CHECK (environment IN ('test', 'live')),
  origin text NOT NULL,
  created_at timestamptz NOT NULL,
  PRIMARY KEY (company_id, environment, origin)
);
-- A preflight carries no key: it is answered for an origin some company allows.
CREATE INDEX company_allowed_origins_origin ON company_allowed_origins (origin);
