-- Every message that carries a payment's link (or its cancellation) to the payer, by the
-- payment's channel. Written in the transaction of the change (create, resend, cancel with
-- notify) together with the job that sends it; the job and the provider's reports move `status`.
-- The row's id is the rails' `reference`: the provider's idempotency key and the key its
-- delivery reports come back with.

CREATE TABLE payment_messages (
  company_id text NOT NULL,
  environment text NOT NULL,
  id text NOT NULL,
  payment_id text NOT NULL,
  channel text NOT NULL CHECK (channel IN ('messaging', 'email')),
  kind text NOT NULL CHECK (kind IN ('link', 'resend', 'cancellation')),
  -- E.164 phone or e-mail address, as it was when the message was recorded.
  recipient text NOT NULL,
  template_id text,
  status text NOT NULL CHECK (status IN ('pending', 'sent', 'delivered', 'failed', 'replied')),
  provider_message_id text,
  error text,
  -- The payer's last reply (status replied) and when the provider says it was made: a repeated
  -- report of the same reply is recognised by the pair and emits nothing.
  reply_text text,
  replied_at timestamptz,
  -- Send attempts made by the job.
  attempts integer NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (company_id, environment, id)
);
CREATE UNIQUE INDEX payment_messages_id ON payment_messages (id);
CREATE INDEX payment_messages_payment ON payment_messages (company_id, environment, payment_id, created_at, id);
-- A delivery report without our reference is matched by the provider's id.
CREATE INDEX payment_messages_provider ON payment_messages (environment, provider_message_id);
