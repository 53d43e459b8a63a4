-- The payer session (SPEC.md "Customer session", PRODUCT.md "Payer session"): login codes and
-- session tokens, both stored as SHA-256 hashes only.
CREATE TABLE customer_login_codes (
  company_id text NOT NULL REFERENCES companies(id),
  environment text NOT NULL CHECK (environment IN ('test', 'live')),
  id text NOT NULL PRIMARY KEY,
  customer_id text NOT NULL,
  phone text NOT NULL,
  code_hash text NOT NULL,
  wrong_attempts integer NOT NULL DEFAULT 0,
  expires_at timestamptz NOT NULL,
  used_at timestamptz,
  created_at timestamptz NOT NULL
);
CREATE INDEX customer_login_codes_phone ON customer_login_codes (company_id, environment, phone, created_at);

CREATE TABLE customer_sessions (
  company_id text NOT NULL REFERENCES companies(id),
  environment text NOT NULL CHECK (environment IN ('test', 'live')),
  id text NOT NULL PRIMARY KEY,
  customer_id text NOT NULL,
  -- The API key that verified the login: the token works only with it.
  key_id text NOT NULL,
  token_hash text NOT NULL UNIQUE,
  expires_at timestamptz NOT NULL,
  revoked_at timestamptz,
  created_at timestamptz NOT NULL
);

-- Every login request and verification by phone (known or not, so both answer alike): the rate
-- limits of SPEC.md count these rows.
CREATE TABLE customer_login_attempts (
  company_id text NOT NULL REFERENCES companies(id),
  environment text NOT NULL CHECK (environment IN ('test', 'live')),
  phone text NOT NULL,
  kind text NOT NULL CHECK (kind IN ('request', 'verify')),
  at timestamptz NOT NULL
);
CREATE INDEX customer_login_attempts_phone ON customer_login_attempts (company_id, environment, phone, kind, at);
