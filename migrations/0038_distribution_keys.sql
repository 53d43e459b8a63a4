-- Ready to distribute (docs/scaling.md): every primary and unique key of a tenant table leads with
-- company_id, and every foreign key between tenant tables carries it, so a distributed PostgreSQL
-- (Citus) can shard the tenant tables by company_id. test/distribution.test.ts reads the catalog and
-- enforces it; src/platform/db/distribution.ts classifies every table and lists the exceptions.
-- Nothing is dropped but indexes and constraints: no row is touched. On a large database each
-- rebuilt index costs one scan of its table under a write lock (minutes per 10^8 rows).

-- 1. Unique indexes on `id` alone become plain indexes of the same name. The composite primary key
--    (company_id, environment, id) keeps ids unique within a tenant; ids are random (80 bits, or a
--    UUID v7), and lookups by id alone (payer pages, jobs that carry only an id) keep their index.
--    ledger_accounts_id stays unique: ledger_entries.account_id references it across companies
--    (splits, docs/ledger.md), the one allowlisted cross-tenant foreign key.
DROP INDEX accounts_id;                CREATE INDEX accounts_id ON accounts (id);
DROP INDEX campaign_messages_id;       CREATE INDEX campaign_messages_id ON campaign_messages (id);
DROP INDEX campaigns_id;               CREATE INDEX campaigns_id ON campaigns (id);
DROP INDEX card_tokens_id;             CREATE INDEX card_tokens_id ON card_tokens (id);
DROP INDEX cards_id;                   CREATE INDEX cards_id ON cards (id);
DROP INDEX cashouts_id;                CREATE INDEX cashouts_id ON cashouts (id);
DROP INDEX charge_refunds_id;          CREATE INDEX charge_refunds_id ON charge_refunds (id);
DROP INDEX charges_id;                 CREATE INDEX charges_id ON charges (id);
DROP INDEX company_onboardings_id;     CREATE INDEX company_onboardings_id ON company_onboardings (id);
DROP INDEX connect_links_id;           CREATE INDEX connect_links_id ON connect_links (id);
DROP INDEX credit_notes_id;            CREATE INDEX credit_notes_id ON credit_notes (id);
DROP INDEX customers_id;               CREATE INDEX customers_id ON customers (id);
DROP INDEX disputes_id;                CREATE INDEX disputes_id ON disputes (id);
DROP INDEX events_id;                  CREATE INDEX events_id ON events (id);
DROP INDEX fiscal_resolutions_id;      CREATE INDEX fiscal_resolutions_id ON fiscal_resolutions (id);
DROP INDEX invoices_id;                CREATE INDEX invoices_id ON invoices (id);
DROP INDEX issuing_authorizations_id;  CREATE INDEX issuing_authorizations_id ON issuing_authorizations (id);
DROP INDEX issuing_cards_id;           CREATE INDEX issuing_cards_id ON issuing_cards (id);
DROP INDEX ledger_transactions_id;     CREATE INDEX ledger_transactions_id ON ledger_transactions (id);
DROP INDEX payment_intents_id;         CREATE INDEX payment_intents_id ON payment_intents (id);
DROP INDEX payment_messages_id;        CREATE INDEX payment_messages_id ON payment_messages (id);
DROP INDEX payments_id;                CREATE INDEX payments_id ON payments (id);
DROP INDEX prices_id;                  CREATE INDEX prices_id ON prices (id);
DROP INDEX stampings_id;               CREATE INDEX stampings_id ON stampings (id);
DROP INDEX utilities_id;               CREATE INDEX utilities_id ON utilities (id);
DROP INDEX utility_payment_links_id;   CREATE INDEX utility_payment_links_id ON utility_payment_links (id);
DROP INDEX wallet_transactions_id;     CREATE INDEX wallet_transactions_id ON wallet_transactions (id);
DROP INDEX webhook_deliveries_id;      CREATE INDEX webhook_deliveries_id ON webhook_deliveries (id);
DROP INDEX webhooks_id;                CREATE INDEX webhooks_id ON webhooks (id);

-- 2. Other unique keys that did not name the company. A charge's intent and an intent's charge are
--    read within the company (inCompany), hence (company_id, …) without the environment.
DROP INDEX charges_intent;
CREATE UNIQUE INDEX charges_intent ON charges (company_id, intent_id);
DROP INDEX payment_intents_charge;
CREATE UNIQUE INDEX payment_intents_charge ON payment_intents (company_id, charge_id) WHERE charge_id IS NOT NULL;
DROP INDEX connect_link_enrollments_form;
CREATE UNIQUE INDEX connect_link_enrollments_form ON connect_link_enrollments (company_id, environment, connect_link_id, form_key);

-- 3. Primary keys on `id` alone: (company_id, environment, id), plus a plain index on id for the
--    lookups by id alone (the plan page, test clocks, a session revoked by its id).
ALTER TABLE subscription_cycles DROP CONSTRAINT subscription_cycles_subscription_id_fkey;

ALTER TABLE plans DROP CONSTRAINT plans_pkey, ADD CONSTRAINT plans_pkey PRIMARY KEY (company_id, environment, id);
CREATE INDEX plans_id ON plans (id);
ALTER TABLE subscriptions DROP CONSTRAINT subscriptions_pkey, ADD CONSTRAINT subscriptions_pkey PRIMARY KEY (company_id, environment, id);
CREATE INDEX subscriptions_id ON subscriptions (id);
ALTER TABLE test_clocks DROP CONSTRAINT test_clocks_pkey, ADD CONSTRAINT test_clocks_pkey PRIMARY KEY (company_id, environment, id);
CREATE INDEX test_clocks_id ON test_clocks (id);
ALTER TABLE customer_login_codes DROP CONSTRAINT customer_login_codes_pkey, ADD CONSTRAINT customer_login_codes_pkey PRIMARY KEY (company_id, environment, id);
CREATE INDEX customer_login_codes_id ON customer_login_codes (id);
-- The session token is looked up within the caller's company and environment (sessionOf).
ALTER TABLE customer_sessions DROP CONSTRAINT customer_sessions_pkey, ADD CONSTRAINT customer_sessions_pkey PRIMARY KEY (company_id, environment, id);
CREATE INDEX customer_sessions_id ON customer_sessions (id);
ALTER TABLE customer_sessions DROP CONSTRAINT customer_sessions_token_hash_key;
CREATE UNIQUE INDEX customer_sessions_token ON customer_sessions (company_id, environment, token_hash);
-- A payer's reply finds its request by the provider's message id or by (charge, phone) without the
-- company (registerSessionReplies): a plain index on the charge keeps the second one indexed.
ALTER TABLE session_approval_requests DROP CONSTRAINT session_approval_requests_pkey,
  ADD CONSTRAINT session_approval_requests_pkey PRIMARY KEY (company_id, environment, charge_id);
CREATE INDEX session_approval_requests_charge ON session_approval_requests (charge_id);

-- 4. Billed cycles: keyed by their subscription within the tenant, and the foreign key carries the
--    tenant. The billing code reads a cycle by (subscription_id, cycle) and by charge_id alone: plain
--    indexes keep those reads indexed.
ALTER TABLE subscription_cycles DROP CONSTRAINT subscription_cycles_pkey,
  ADD CONSTRAINT subscription_cycles_pkey PRIMARY KEY (company_id, environment, subscription_id, cycle);
CREATE INDEX subscription_cycles_subscription ON subscription_cycles (subscription_id, cycle);
DROP INDEX subscription_cycles_payment;
CREATE UNIQUE INDEX subscription_cycles_payment ON subscription_cycles (company_id, environment, payment_id) WHERE payment_id IS NOT NULL;
DROP INDEX subscription_cycles_charge;
CREATE UNIQUE INDEX subscription_cycles_charge ON subscription_cycles (company_id, environment, charge_id) WHERE charge_id IS NOT NULL;
CREATE INDEX subscription_cycles_charge_id ON subscription_cycles (charge_id) WHERE charge_id IS NOT NULL;
ALTER TABLE subscription_cycles ADD CONSTRAINT subscription_cycles_subscription_fkey
  FOREIGN KEY (company_id, environment, subscription_id) REFERENCES subscriptions (company_id, environment, id);
