-- Secrets at rest (docs/operations.md "Secrets at rest"). Stored idempotent responses are now
-- sealed when written; those stored in clear by earlier releases may hold a secret (a webhook's
-- secret, a new company's test keys). A response is replayed for one minute only (SPEC.md), so one
-- older than an hour is never read again: its body is dropped here. Younger ones are sealed by the
-- pass every process runs at start (src/platform/secret-columns.ts), as are the clear webhook,
-- flow, fiscal-profile and connector secrets.
UPDATE idempotency_keys SET response_body = NULL
WHERE status_code IS NOT NULL AND completed_at < now() - interval '1 hour' AND response_body IS NOT NULL;
