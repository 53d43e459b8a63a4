-- A company's WhatsApp Business Cloud API connector, per environment (issue 30, docs/whatsapp.md):
-- its phone number id at Meta, the access token, app secret and webhook verify token (sealed at
-- rest, write-only), the approved template of each purpose and their language, and the token of
-- its webhook URL (/v1/rails/whatsapp/events/{token}), which names the company.
CREATE TABLE whatsapp_connectors (
  company_id text NOT NULL REFERENCES companies(id),
  environment text NOT NULL,
  phone_number_id text NOT NULL,
  access_token_sealed text NOT NULL,
  app_secret_sealed text NOT NULL,
  verify_token_sealed text NOT NULL,
  secret_hints text NOT NULL DEFAULT '{}',
  templates text NOT NULL DEFAULT '{}',
  language text NOT NULL DEFAULT 'es',
  events_token text NOT NULL,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (company_id, environment)
);
CREATE UNIQUE INDEX whatsapp_connectors_events_token ON whatsapp_connectors (events_token);
