-- Run once by the postgres image when it creates the database (compose.yaml). Through PgBouncer in
-- transaction mode the service's own session limits (DB_*_TIMEOUT_MS, sent as startup parameters)
-- are dropped, so the role carries the same ones (docs/scaling.md). Direct connections still send
-- theirs, which take precedence.
ALTER ROLE CURRENT_USER SET statement_timeout = '30s';
ALTER ROLE CURRENT_USER SET lock_timeout = '15s';
ALTER ROLE CURRENT_USER SET idle_in_transaction_session_timeout = '60s';
