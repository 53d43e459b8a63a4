-- The payer session's caps on login codes sent (docs/session.md): per client address and per
-- company and environment, over 24 hours, against SMS pumping.
ALTER TABLE customer_login_codes ADD COLUMN ip text;
CREATE INDEX customer_login_codes_ip ON customer_login_codes (ip, created_at);
CREATE INDEX customer_login_codes_company ON customer_login_codes (company_id, environment, created_at);
