-- Companies, API keys, idempotency, rate limits, the event outbox and the job queue.

CREATE TABLE companies (
  id text PRIMARY KEY,
  name text NOT NULL,
  nit text,
  features jsonb NOT NULL DEFAULT '[]',
  max_transaction_cop bigint NOT NULL DEFAULT 500000000,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE api_keys (
  id text PRIMARY KEY,
  company_id text NOT NULL REFERENCES companies(id),
  environment text NOT NULL CHECK (environment IN ('test', 'live')),
  kind text NOT NULL CHECK (kind IN ('secret', 'publishable')),
  -- SHA-256 of the whole key; the key itself is never stored.
  key_hash text NOT NULL UNIQUE,
  -- First characters, for operators to recognise a key ("sk_test_Ab12...").
  key_hint text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  revoked_at timestamptz
);
CREATE INDEX api_keys_company ON api_keys (company_id, environment, kind);

-- A row exists only once its request succeeded: it is written in the same transaction as the
-- operation, so a crash can never leave a key "in progress".
CREATE TABLE idempotency_keys (
  company_id text NOT NULL,
  environment text NOT NULL,
  key text NOT NULL,
  fingerprint text NOT NULL,
  status_code integer,
  response_body text,
  completed_at timestamptz,
  PRIMARY KEY (company_id, environment, key)
);
CREATE INDEX idempotency_keys_completed ON idempotency_keys (completed_at);

CREATE UNLOGGED TABLE rate_limit_windows (
  bucket text NOT NULL,
  window_start bigint NOT NULL,
  hits integer NOT NULL,
  PRIMARY KEY (bucket, window_start)
);

-- The transactional outbox: an event row commits with the state change that caused it.
CREATE TABLE events (
  company_id text NOT NULL,
  environment text NOT NULL,
  id text NOT NULL,
  type text NOT NULL,
  data jsonb NOT NULL,
  -- The exact delivery body ({id, event, created_at, is_test, data}), fixed at emit time so every
  -- attempt sends (and signs) the same bytes, in the API's field order.
  payload text NOT NULL,
  created_at timestamptz NOT NULL,
  PRIMARY KEY (company_id, environment, id)
);
CREATE UNIQUE INDEX events_id ON events (id);
CREATE INDEX events_list ON events (company_id, environment, created_at, id);

-- Background work: enqueued inside the business transaction, run after commit by workers that
-- claim rows with FOR UPDATE SKIP LOCKED (safe with any number of worker processes).
CREATE TABLE jobs (
  id text PRIMARY KEY,
  kind text NOT NULL,
  payload jsonb NOT NULL,
  run_at timestamptz NOT NULL,
  attempts integer NOT NULL DEFAULT 0,
  max_attempts integer NOT NULL DEFAULT 10,
  locked_until timestamptz,
  last_error text,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX jobs_due ON jobs (run_at);
