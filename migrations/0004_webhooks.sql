-- Webhook endpoints, one delivery per (event, webhook), and every attempt of each delivery.

CREATE TABLE webhooks (
  company_id text NOT NULL REFERENCES companies(id),
  environment text NOT NULL,
  id uuid NOT NULL,
  name text NOT NULL,
  description text,
  url text NOT NULL,
  events jsonb NOT NULL,
  header text,
  secret text,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  deleted_at timestamptz,
  PRIMARY KEY (company_id, environment, id)
);
CREATE UNIQUE INDEX webhooks_id ON webhooks (id);
CREATE INDEX webhooks_active ON webhooks (company_id, environment) WHERE deleted_at IS NULL;

-- Written in the same transaction as the event (fan-out at emit time), so an event never lacks
-- its deliveries. Workers lease due rows with FOR UPDATE SKIP LOCKED; the lease outlasts the
-- 30 s request timeout, so two attempts of one delivery never run at the same time.
CREATE TABLE webhook_deliveries (
  company_id text NOT NULL,
  environment text NOT NULL,
  id text NOT NULL,
  webhook_id uuid NOT NULL,
  event_id text NOT NULL,
  event_type text NOT NULL,
  status text NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed', 'cancelled')),
  attempts integer NOT NULL DEFAULT 0,
  -- NULL: the first attempt plus the configured retry schedule. A manual retry of a finished
  -- delivery sets it to allow exactly one more attempt.
  max_attempts integer,
  next_attempt_at timestamptz,
  locked_until timestamptz,
  last_status_code integer,
  last_error text,
  created_at timestamptz NOT NULL,
  completed_at timestamptz,
  PRIMARY KEY (company_id, environment, id)
);
CREATE UNIQUE INDEX webhook_deliveries_id ON webhook_deliveries (id);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (company_id, environment, webhook_id, created_at, id);

CREATE TABLE webhook_attempts (
  company_id text NOT NULL,
  environment text NOT NULL,
  id text NOT NULL,
  delivery_id text NOT NULL,
  attempted_at timestamptz NOT NULL,
  status_code integer,
  latency_ms integer NOT NULL,
  error text,
  response_excerpt text,
  PRIMARY KEY (company_id, environment, id)
);
CREATE INDEX webhook_attempts_delivery ON webhook_attempts (delivery_id, attempted_at);
