-- The approval request of a held session charge (docs/session.md "Charges"): which message asked
-- which phone, so a reply is matched by the provider's message id (and the phone), never by a
-- charge id a status report merely names.
CREATE TABLE session_approval_requests (
  company_id text NOT NULL REFERENCES companies(id),
  environment text NOT NULL CHECK (environment IN ('test', 'live')),
  charge_id text NOT NULL PRIMARY KEY,
  customer_id text NOT NULL,
  phone text NOT NULL,
  provider_message_id text,
  created_at timestamptz NOT NULL
);
CREATE INDEX session_approval_requests_provider ON session_approval_requests (environment, provider_message_id);
