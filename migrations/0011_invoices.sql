-- Invoices (both modes of POST /invoices), their stamping attempts and credit notes (docs/invoicing.md "Invoices").
-- Money columns are integer cents (bigint); tax rates are basis points.

CREATE TABLE invoices (
  company_id text NOT NULL REFERENCES companies(id),
  environment text NOT NULL,
  id text NOT NULL,
  -- 'issued' (created with items, stamped by Recaudo) or 'imported' (without items, never stamped).
  mode text NOT NULL CHECK (mode IN ('issued', 'imported')),
  status text NOT NULL CHECK (status IN ('CREATED', 'PAID', 'CANCELED', 'REFUNDED')),
  fiscal_status text CHECK (fiscal_status IN ('pending', 'stamped', 'rejected')),
  stamp_policy text NOT NULL CHECK (stamp_policy IN ('none', 'on_payment', 'on_issue', 'manual')),
  currency text NOT NULL,
  customer_id uuid,
  -- {id, name, document_number} as it was when the invoice was created.
  customer jsonb,
  -- Resolved lines; amounts as decimal strings of cents.
  items jsonb NOT NULL,
  subtotal bigint NOT NULL CHECK (subtotal >= 0),
  tax_amount bigint NOT NULL CHECK (tax_amount >= 0),
  total bigint NOT NULL CHECK (total > 0),
  -- Sum of the credit notes not rejected (never more than total).
  credited bigint NOT NULL DEFAULT 0 CHECK (credited >= 0 AND credited <= total),
  name text,
  reference text,
  due_date text,
  metadata jsonb,
  provider text,
  provider_id text,
  payment_id text NOT NULL,
  test_scenario text,
  -- Set when the tax authority accepted the invoice.
  number text,
  cufe text,
  issue_date text,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (company_id, environment, id)
);
CREATE UNIQUE INDEX invoices_id ON invoices (id);
CREATE UNIQUE INDEX invoices_payment ON invoices (company_id, environment, payment_id);
CREATE INDEX invoices_list ON invoices (company_id, environment, created_at, id);
CREATE INDEX invoices_reference ON invoices (company_id, environment, reference);
CREATE INDEX invoices_provider_id ON invoices (company_id, environment, provider_id);

CREATE TABLE credit_notes (
  company_id text NOT NULL REFERENCES companies(id),
  environment text NOT NULL,
  id text NOT NULL,
  invoice_id text NOT NULL,
  amount bigint NOT NULL CHECK (amount > 0),
  subtotal bigint NOT NULL,
  tax_amount bigint NOT NULL,
  reason text NOT NULL,
  discrepancy_code text NOT NULL,
  -- The invoice lines' share of the note (same shape as invoices.items).
  items jsonb NOT NULL,
  status text NOT NULL CHECK (status IN ('pending', 'issued', 'rejected')),
  -- 'api' (POST /invoices/{id}/credit-notes) or 'refund' (automatic, on the payment's refund).
  origin text NOT NULL,
  number text,
  cude text,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (company_id, environment, id)
);
CREATE UNIQUE INDEX credit_notes_id ON credit_notes (id);
CREATE INDEX credit_notes_invoice ON credit_notes (company_id, environment, invoice_id, created_at);

-- One row per attempt to stamp a document (invoice or credit note): the folio it holds, the built
-- document, the tax authority's track id and outcome. A retry of the job continues the same row.
CREATE TABLE stampings (
  company_id text NOT NULL REFERENCES companies(id),
  environment text NOT NULL,
  id text NOT NULL,
  invoice_id text NOT NULL,
  credit_note_id text,
  kind text NOT NULL CHECK (kind IN ('invoice', 'credit_note')),
  status text NOT NULL CHECK (status IN ('submitting', 'pending', 'accepted', 'rejected')),
  resolution_id text,
  -- The resolution's data as allocated (FiscalResolutionData), so a retry rebuilds the same document.
  resolution jsonb,
  prefix text,
  folio bigint,
  number text,
  issue_date text,
  issue_time text,
  identity_code text,
  qr_text text,
  xml text,
  -- base64 (the same on both engines)
  pdf text,
  track_id text,
  submitted_at timestamptz,
  rejection_reason text,
  messages jsonb,
  total bigint NOT NULL,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  settled_at timestamptz,
  PRIMARY KEY (company_id, environment, id)
);
CREATE UNIQUE INDEX stampings_id ON stampings (id);
CREATE INDEX stampings_invoice ON stampings (company_id, environment, invoice_id, created_at);
-- At most one attempt in flight and one accepted document per invoice / credit note.
CREATE UNIQUE INDEX stampings_open_invoice ON stampings (company_id, environment, invoice_id) WHERE kind = 'invoice' AND status IN ('submitting', 'pending', 'accepted');
CREATE UNIQUE INDEX stampings_open_note ON stampings (company_id, environment, credit_note_id) WHERE kind = 'credit_note' AND status IN ('submitting', 'pending', 'accepted');
