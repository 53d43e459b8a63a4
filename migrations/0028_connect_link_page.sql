-- The connect-link page (docs/pages.md "Connect-link page"): what a payer enrolled through a link.
-- One row per form sent (form_key: a hash of the page's form token), so a form sent twice enrolls
-- once; the OTP step of a wallet account finds its account here.
CREATE TABLE connect_link_enrollments (
  company_id text NOT NULL REFERENCES companies(id),
  environment text NOT NULL,
  id text NOT NULL,
  connect_link_id text NOT NULL,
  form_key text NOT NULL,
  account_id uuid,
  card_id text,
  created_at timestamptz NOT NULL,
  PRIMARY KEY (company_id, environment, id)
);
CREATE UNIQUE INDEX connect_link_enrollments_form ON connect_link_enrollments (connect_link_id, form_key);
CREATE INDEX connect_link_enrollments_link ON connect_link_enrollments (company_id, environment, connect_link_id, created_at);
