CREATE TABLE customers (
  company_id text NOT NULL REFERENCES companies(id),
  environment text NOT NULL,
  id uuid NOT NULL,
  type text NOT NULL,
  first_name text,
  last_name text,
  email text,
  phone text,
  document_type text,
  document_number text,
  document_verification text,
  address jsonb,
  fiscal_responsibilities jsonb,
  related_to uuid,
  tax_regime text,
  metadata jsonb,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  deleted_at timestamptz,
  PRIMARY KEY (company_id, environment, id)
);
CREATE UNIQUE INDEX customers_id ON customers (id);
CREATE INDEX customers_list ON customers (company_id, environment, created_at, id) WHERE deleted_at IS NULL;
CREATE INDEX customers_email ON customers (company_id, environment, email) WHERE deleted_at IS NULL;
CREATE INDEX customers_document ON customers (company_id, environment, document_number) WHERE deleted_at IS NULL;
CREATE INDEX customers_phone ON customers (company_id, environment, phone) WHERE deleted_at IS NULL;
