-- The public plan page (docs/subscriptions.md "Plan page"): the form token of the subscription a
-- payer made there, so a form sent twice subscribes once.
ALTER TABLE subscriptions ADD COLUMN page_token text;
CREATE UNIQUE INDEX subscriptions_page_token ON subscriptions (page_token) WHERE page_token IS NOT NULL;
