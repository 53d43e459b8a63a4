-- Retention (docs/operations.md "Retention"): every sweep reads an index, never a whole table.
-- Events, deliveries, login codes, connector events and approval requests are swept through the
-- index on their time-ordered id (ids carry their creation time); card tokens through
-- card_tokens_expiry. The others need these.

-- Completed keys whose stored response is still there, oldest first. Replaces the plain index on
-- completed_at, which nothing else reads: a key whose body was dropped (or a claim still in
-- progress) leaves this index, so the sweep never walks them again.
DROP INDEX IF EXISTS idempotency_keys_completed;
CREATE INDEX IF NOT EXISTS idempotency_keys_body_completed ON idempotency_keys (completed_at) WHERE response_body IS NOT NULL;

-- An event is swept only once no delivery refers to it (the dispatcher reads the event's body at
-- every attempt, and a manual retry may come at any time while the delivery exists). Also serves
-- GET /v1/webhooks/{id}/deliveries?filter[event_id]=.
CREATE INDEX IF NOT EXISTS webhook_deliveries_event ON webhook_deliveries (company_id, environment, event_id);

-- Finished flow runs, oldest first (a pending run still has its job).
CREATE INDEX IF NOT EXISTS flow_runs_finished ON flow_runs (created_at) WHERE status <> 'pending';

-- Payer sessions by expiry (a session lasts 7 days from its creation).
CREATE INDEX IF NOT EXISTS customer_sessions_expiry ON customer_sessions (expires_at);

-- Login attempts (no key of their own) by time: the rate limits look back an hour at most.
CREATE INDEX IF NOT EXISTS customer_login_attempts_at ON customer_login_attempts (at);
