-- Campaigns (SPEC.md "Campaigns", PRODUCT.md "Campaigns", docs/campaigns.md): a company's template
-- message with an image or a video, sent to many phones. The campaign and one message per
-- recipient are written in one transaction; a per-sender dispatcher job hands the messages to the
-- messaging rail, paced by a token bucket and a gap per phone, inside the contact hours.

CREATE TABLE campaigns (
  company_id text NOT NULL,
  environment text NOT NULL CHECK (environment IN ('test', 'live')),
  id text NOT NULL,
  status text NOT NULL CHECK (status IN ('queued', 'sending', 'completed', 'cancelled')),
  template_id text NOT NULL,
  media_type text NOT NULL CHECK (media_type IN ('image', 'video')),
  media_url text NOT NULL,
  -- What the bytes said when the media was fetched (never the URL's extension or Content-Type).
  media_content_type text NOT NULL,
  media_bytes integer NOT NULL,
  media_width integer,
  media_height integer,
  optional_1 text,
  optional_2 text,
  optional_3 text,
  recipients integer NOT NULL,
  -- [{phone, reason}] of the request: phones that were not E.164.
  rejected jsonb NOT NULL,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  completed_at timestamptz,
  cancelled_at timestamptz,
  PRIMARY KEY (company_id, environment, id)
);
CREATE UNIQUE INDEX campaigns_id ON campaigns (id);
CREATE INDEX campaigns_created ON campaigns (company_id, environment, created_at, id);

-- One message per recipient. The row's id is the messaging rail's `reference` (the provider's
-- idempotency key and the key its reports come back with).
CREATE TABLE campaign_messages (
  company_id text NOT NULL,
  environment text NOT NULL CHECK (environment IN ('test', 'live')),
  id text NOT NULL,
  campaign_id text NOT NULL,
  -- First in, first out across the sender's campaigns (ids made in one millisecond do not sort).
  seq bigserial NOT NULL,
  -- E.164.
  recipient text NOT NULL,
  status text NOT NULL CHECK (status IN ('queued', 'sending', 'sent', 'delivered', 'failed', 'replied', 'cancelled')),
  -- The dispatcher run (its job's token) that took the message: a run that died mid-send is run
  -- again with the same token and sends what it took again, with the same reference.
  dispatch_token text,
  -- When the dispatcher handed it to the rail: the per-phone gap counts from here.
  sent_at timestamptz,
  provider_message_id text,
  error text,
  reply_text text,
  replied_at timestamptz,
  attempts integer NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (company_id, environment, id)
);
CREATE UNIQUE INDEX campaign_messages_id ON campaign_messages (id);
CREATE INDEX campaign_messages_campaign ON campaign_messages (company_id, environment, campaign_id, created_at, id);
CREATE INDEX campaign_messages_status ON campaign_messages (company_id, environment, status, seq);
CREATE INDEX campaign_messages_recipient ON campaign_messages (company_id, environment, recipient, sent_at);
CREATE INDEX campaign_messages_provider ON campaign_messages (environment, provider_message_id);

-- A sender (a company's messaging identity in one environment): its token bucket and the one
-- dispatcher job that is meant to run for it (job_token; any other job of the sender is stale).
CREATE TABLE campaign_senders (
  company_id text NOT NULL,
  environment text NOT NULL CHECK (environment IN ('test', 'live')),
  -- The bucket as its theoretical arrival time: null = full (src/modules/campaigns/pacing.ts).
  bucket_tat timestamptz,
  job_token text,
  wake_at timestamptz,
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (company_id, environment)
);
