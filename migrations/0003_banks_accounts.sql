-- The bank catalogue is global (not per company); rows are upserted at start from src/modules/banks/catalogue.ts.
CREATE TABLE banks (
  id uuid PRIMARY KEY,
  code text NOT NULL UNIQUE,
  name text NOT NULL,
  supported_types jsonb NOT NULL,
  mask text,
  transaction_avg numeric,
  available boolean NOT NULL,
  banklink boolean NOT NULL,
  connection_type text NOT NULL,
  priority integer NOT NULL,
  instructions text NOT NULL,
  is_platform boolean NOT NULL DEFAULT false,
  -- The generated SVG logo: initials on a brand-like colour (src/modules/banks/logo.ts).
  logo_text text NOT NULL,
  logo_color text NOT NULL
);

CREATE TABLE accounts (
  company_id text NOT NULL REFERENCES companies(id),
  environment text NOT NULL,
  id uuid NOT NULL,
  customer_id uuid NOT NULL,
  bank_id uuid REFERENCES banks(id),
  subtype text NOT NULL,
  status text NOT NULL,
  title text,
  account_number text NOT NULL,
  "authorization" boolean NOT NULL,
  re_enroll boolean NOT NULL,
  external_id text,
  related_customer_id uuid,
  wallet_company_id text,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  deleted_at timestamptz,
  PRIMARY KEY (company_id, environment, id)
);
CREATE UNIQUE INDEX accounts_id ON accounts (id);
CREATE INDEX accounts_list ON accounts (company_id, environment, created_at, id) WHERE deleted_at IS NULL;
CREATE INDEX accounts_customer ON accounts (company_id, environment, customer_id, created_at, id) WHERE deleted_at IS NULL;

CREATE TABLE connect_links (
  company_id text NOT NULL REFERENCES companies(id),
  environment text NOT NULL,
  id text NOT NULL,
  customer_id uuid NOT NULL,
  single_use boolean NOT NULL,
  redirect_url text,
  token text NOT NULL,
  status text NOT NULL,
  uses integer NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL,
  deleted_at timestamptz,
  PRIMARY KEY (company_id, environment, id)
);
CREATE UNIQUE INDEX connect_links_id ON connect_links (id);
CREATE UNIQUE INDEX connect_links_token ON connect_links (token);
