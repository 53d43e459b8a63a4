-- Invoicing set-up (docs/invoicing.md): the price catalogue, DIAN numbering resolutions with their
-- folio counters, and the company fiscal profile per environment. Money is integer cents (bigint);
-- tax rates are basis points (19 % = 1900). Dates of resolutions are Bogotá calendar dates kept as
-- 'YYYY-MM-DD' text (they compare correctly as text and never shift with a time zone).

CREATE TABLE prices (
  company_id text NOT NULL REFERENCES companies(id),
  environment text NOT NULL CHECK (environment IN ('test', 'live')),
  id text NOT NULL,
  name text NOT NULL,
  unit_amount bigint NOT NULL CHECK (unit_amount >= 1),
  currency text NOT NULL CHECK (currency IN ('COP', 'USD', 'MXN')),
  tax_type text NOT NULL CHECK (tax_type IN ('iva', 'inc')),
  tax_rate_bp integer NOT NULL CHECK (tax_rate_bp BETWEEN 0 AND 10000),
  tax_behavior text NOT NULL CHECK (tax_behavior IN ('exclusive', 'inclusive')),
  active boolean NOT NULL,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (company_id, environment, id)
);
CREATE UNIQUE INDEX prices_id ON prices (id);
CREATE INDEX prices_list ON prices (company_id, environment, created_at, id);

CREATE TABLE fiscal_resolutions (
  company_id text NOT NULL REFERENCES companies(id),
  environment text NOT NULL CHECK (environment IN ('test', 'live')),
  id text NOT NULL,
  number text NOT NULL,
  prefix text NOT NULL CHECK (prefix ~ '^[A-Z0-9]{0,4}$'),
  document_type text NOT NULL CHECK (document_type IN ('invoice', 'credit_note')),
  from_folio bigint NOT NULL CHECK (from_folio >= 1),
  to_folio bigint NOT NULL,
  valid_from text NOT NULL CHECK (valid_from ~ '^\d{4}-\d{2}-\d{2}$'),
  valid_until text NOT NULL CHECK (valid_until ~ '^\d{4}-\d{2}-\d{2}$'),
  technical_key text,
  status text NOT NULL CHECK (status IN ('draft', 'active', 'retired')),
  -- The folio counter: the next folio to hand out. Advanced only by allocateFolio inside the
  -- caller's transaction while the row is locked, so folios are gap-free and never repeat.
  next_folio bigint NOT NULL,
  -- The sandbox resolutions every test environment starts with (one per document type).
  is_default boolean NOT NULL DEFAULT false,
  activated_at timestamptz,
  retired_at timestamptz,
  -- Each alert fires once per resolution (docs/invoicing.md, alerts).
  alerted_80_at timestamptz,
  alerted_95_at timestamptz,
  alerted_expiring_at timestamptz,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (company_id, environment, id),
  CHECK (from_folio <= to_folio),
  CHECK (next_folio BETWEEN from_folio AND to_folio + 1),
  CHECK (valid_from <= valid_until)
);
CREATE UNIQUE INDEX fiscal_resolutions_id ON fiscal_resolutions (id);
CREATE INDEX fiscal_resolutions_list ON fiscal_resolutions (company_id, environment, created_at, id);
-- One active resolution per prefix and document type.
CREATE UNIQUE INDEX fiscal_resolutions_one_active ON fiscal_resolutions (company_id, environment, document_type, prefix) WHERE status = 'active';
-- The default sandbox resolutions are created once (INSERT ... ON CONFLICT DO NOTHING).
CREATE UNIQUE INDEX fiscal_resolutions_default ON fiscal_resolutions (company_id, environment, document_type) WHERE is_default;

CREATE TABLE fiscal_profiles (
  company_id text NOT NULL REFERENCES companies(id),
  environment text NOT NULL CHECK (environment IN ('test', 'live')),
  nit text NOT NULL CHECK (nit ~ '^[0-9]{5,15}$'),
  dv text NOT NULL CHECK (dv ~ '^[0-9]$'),
  legal_name text NOT NULL,
  trade_name text,
  address_line text NOT NULL,
  city_code text NOT NULL CHECK (city_code ~ '^[0-9]{5}$'),
  email text,
  phone text,
  responsibilities jsonb NOT NULL,
  tax_regime text NOT NULL,
  software_id text NOT NULL,
  software_pin text NOT NULL,
  -- PKCS#12 as base64 and its password; write-only through the API (only a summary is shown).
  certificate_p12 text,
  certificate_password text,
  certificate_summary jsonb,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (company_id, environment)
);
