-- Flows (docs/flows.md), companies onboarded by a platform (docs/companies.md).

-- A flow: on an event type, when the event's data passes the filters, run an action.
CREATE TABLE flows (
  company_id text NOT NULL REFERENCES companies(id),
  environment text NOT NULL CHECK (environment IN ('test', 'live')),
  id text NOT NULL,
  name text NOT NULL,
  event_type text NOT NULL,
  -- [{path, op, value}], all must hold (docs/flows.md "Filters").
  filters jsonb NOT NULL,
  -- {type: call_url, url} | {type: send_message, template_id, to | to_path, variables}.
  action jsonb NOT NULL,
  -- Signs call_url bodies (Signature, as webhooks); shown once at creation.
  secret text,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  deleted_at timestamptz,
  PRIMARY KEY (company_id, environment, id)
);
CREATE INDEX flows_by_event ON flows (company_id, environment, event_type) WHERE deleted_at IS NULL;

-- One run per (flow, event), written in the emitting transaction; its job does the action.
CREATE TABLE flow_runs (
  company_id text NOT NULL REFERENCES companies(id),
  environment text NOT NULL CHECK (environment IN ('test', 'live')),
  id text NOT NULL,
  flow_id text NOT NULL,
  event_id text NOT NULL,
  event_type text NOT NULL,
  -- The event's delivery body, fixed at emit time (call_url sends and signs these bytes).
  payload text NOT NULL,
  status text NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
  attempts integer NOT NULL DEFAULT 0,
  last_status_code integer,
  last_error text,
  next_attempt_at timestamptz,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  completed_at timestamptz,
  PRIMARY KEY (company_id, environment, id)
);
CREATE UNIQUE INDEX flow_runs_once ON flow_runs (company_id, environment, flow_id, event_id);
CREATE INDEX flow_runs_list ON flow_runs (company_id, environment, flow_id, created_at, id);

-- A platform company may onboard companies of its own (POST /v1/companies); set by the operator.
ALTER TABLE companies ADD COLUMN platform boolean NOT NULL DEFAULT false;
ALTER TABLE companies ADD COLUMN parent_company_id text REFERENCES companies(id);

-- The KYB record of a company a platform onboarded: the platform's tenant row, its id the new
-- company's id.
CREATE TABLE company_onboardings (
  company_id text NOT NULL REFERENCES companies(id),
  environment text NOT NULL CHECK (environment IN ('test', 'live')),
  id text NOT NULL REFERENCES companies(id),
  status text NOT NULL CHECK (status IN ('pending', 'in_review', 'active', 'rejected')),
  name text NOT NULL,
  legal_name text NOT NULL,
  nit text NOT NULL CHECK (nit ~ '^[0-9]{5,15}$'),
  dv text NOT NULL CHECK (dv ~ '^[0-9]$'),
  -- The validated KYB body as sent (normalised), for review and the response.
  data jsonb NOT NULL,
  status_reason text,
  live_keys_issued_at timestamptz,
  reviewed_at timestamptz,
  activated_at timestamptz,
  rejected_at timestamptz,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (company_id, environment, id)
);
CREATE UNIQUE INDEX company_onboardings_id ON company_onboardings (id);
CREATE INDEX company_onboardings_list ON company_onboardings (company_id, environment, created_at, id);
