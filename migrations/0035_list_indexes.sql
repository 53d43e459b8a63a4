-- Lists read by keyset (docs/lists.md): every page is one range of an index in the index's own
-- order, `(company_id, environment[, parent], [filter,] sort column, id)`. The lists read it
-- forwards (ascending) or backwards (descending), so one plain ascending index serves both
-- directions and the cursor's row comparison `(sort, id) < (key, id)` starts the scan.
--
-- Every default order (created_at, id) already had its index, as did customer_id on charges,
-- cards, accounts and issuing cards, and the per-parent lists (a payment's intents and messages,
-- a webhook's deliveries, a campaign's messages, a flow's runs, a customer's wallet movements).
-- This adds what the other sorts and the equality filters lack. An index that led with the same
-- filter column but stopped there is replaced by one that goes on with (created_at, id): it still
-- serves every lookup the old one did, and a filtered list no longer sorts its matches.
--
-- Not indexed, on purpose (the filter rides the list's order index as a row filter):
--   * `filter[id]` (the primary key answers it: one row);
--   * ranges (`filter[amount][gte]`, `filter[created_at][lt]`): a created_at range is a range of the
--     order index itself; an amount range cannot be read in created_at order from any index;
--   * charges.currency and prices.currency (COP nearly always: an index would not narrow anything);
--   * fixed or small catalogues: message templates (global, a few dozen rows), a company's fiscal
--     resolutions (a handful) and test clocks (a handful).
-- A `sort=` other than the default together with a filter reads the filter's index and sorts the
-- matches (documented as such).
--
-- On a large live database each CREATE here holds a write lock on its table while it scans it;
-- there, create them first with CREATE INDEX CONCURRENTLY (same names) and this file only checks.

-- customers (GET /customers): sort updated_at; filters email, document_number, phone.
CREATE INDEX IF NOT EXISTS customers_list_updated ON customers (company_id, environment, updated_at, id) WHERE deleted_at IS NULL;
DROP INDEX IF EXISTS customers_email;
CREATE INDEX customers_email ON customers (company_id, environment, email, created_at, id) WHERE deleted_at IS NULL;
DROP INDEX IF EXISTS customers_document;
CREATE INDEX customers_document ON customers (company_id, environment, document_number, created_at, id) WHERE deleted_at IS NULL;
DROP INDEX IF EXISTS customers_phone;
CREATE INDEX customers_phone ON customers (company_id, environment, phone, created_at, id) WHERE deleted_at IS NULL;

-- charges (GET /charges): status, payment_method_type, title, external_id, key (idempotency_key).
-- paid_at (charges_paid) and customer_id (charges_customer) had theirs.
CREATE INDEX IF NOT EXISTS charges_list_status ON charges (company_id, environment, status, created_at, id);
CREATE INDEX IF NOT EXISTS charges_list_method ON charges (company_id, environment, payment_method_type, created_at, id);
CREATE INDEX IF NOT EXISTS charges_list_title ON charges (company_id, environment, title, created_at, id);
DROP INDEX IF EXISTS charges_external_id;
CREATE INDEX charges_external_id ON charges (company_id, environment, external_id, created_at, id);
DROP INDEX IF EXISTS charges_key;
CREATE INDEX charges_key ON charges (company_id, environment, idempotency_key, created_at, id);

-- payments (GET /payments): status, reference, external_id (paid_at: payments_paid).
CREATE INDEX IF NOT EXISTS payments_list_status ON payments (company_id, environment, status, created_at, id);
DROP INDEX IF EXISTS payments_reference;
CREATE INDEX payments_reference ON payments (company_id, environment, reference, created_at, id);
DROP INDEX IF EXISTS payments_external_id;
CREATE INDEX payments_external_id ON payments (company_id, environment, external_id, created_at, id);

-- payment intents (GET /payment-intents): sort paid_at; status, external_id, network_id.
CREATE INDEX IF NOT EXISTS payment_intents_list_paid ON payment_intents (company_id, environment, paid_at, id);
CREATE INDEX IF NOT EXISTS payment_intents_list_status ON payment_intents (company_id, environment, status, created_at, id);
CREATE INDEX IF NOT EXISTS payment_intents_list_external_id ON payment_intents (company_id, environment, external_id, created_at, id);
CREATE INDEX IF NOT EXISTS payment_intents_list_network_id ON payment_intents (company_id, environment, network_id, created_at, id);

-- events (GET /events): type.
CREATE INDEX IF NOT EXISTS events_list_type ON events (company_id, environment, type, created_at, id);

-- a webhook's deliveries (GET /webhooks/{id}/deliveries): status, event (event_id: webhook_deliveries_event).
CREATE INDEX IF NOT EXISTS webhook_deliveries_list_status ON webhook_deliveries (company_id, environment, webhook_id, status, created_at, id);
CREATE INDEX IF NOT EXISTS webhook_deliveries_list_event ON webhook_deliveries (company_id, environment, webhook_id, event_type, created_at, id);

-- invoices (GET /invoices): status, fiscal_status (`null` included: IS NULL is an index condition), reference, provider_id.
CREATE INDEX IF NOT EXISTS invoices_list_status ON invoices (company_id, environment, status, created_at, id);
CREATE INDEX IF NOT EXISTS invoices_list_fiscal_status ON invoices (company_id, environment, fiscal_status, created_at, id);
DROP INDEX IF EXISTS invoices_reference;
CREATE INDEX invoices_reference ON invoices (company_id, environment, reference, created_at, id);
DROP INDEX IF EXISTS invoices_provider_id;
CREATE INDEX invoices_provider_id ON invoices (company_id, environment, provider_id, created_at, id);

-- accounts (GET /accounts, GET /customers/{id}/accounts): sort updated_at; status (customer_id: accounts_customer).
CREATE INDEX IF NOT EXISTS accounts_list_updated ON accounts (company_id, environment, updated_at, id) WHERE deleted_at IS NULL;
CREATE INDEX IF NOT EXISTS accounts_list_status ON accounts (company_id, environment, status, created_at, id) WHERE deleted_at IS NULL;

-- cash-outs (GET /cashouts): status, method, customer_id (external_id: the unique cashouts_external_id, one row).
CREATE INDEX IF NOT EXISTS cashouts_list_status ON cashouts (company_id, environment, status, created_at, id);
CREATE INDEX IF NOT EXISTS cashouts_list_method ON cashouts (company_id, environment, method, created_at, id);
CREATE INDEX IF NOT EXISTS cashouts_list_customer ON cashouts (company_id, environment, customer_id, created_at, id);

-- disputes (GET /disputes): status, reason (charge_id, payment_id: their unique indexes, one row).
CREATE INDEX IF NOT EXISTS disputes_list_status ON disputes (company_id, environment, status, created_at, id);
CREATE INDEX IF NOT EXISTS disputes_list_reason ON disputes (company_id, environment, reason, created_at, id);

-- subscriptions (GET /subscriptions, GET /customers/{id}/subscriptions): status, internal_id, customer_id, plan_id.
CREATE INDEX IF NOT EXISTS subscriptions_list_status ON subscriptions (company_id, environment, status, created_at, id);
CREATE INDEX IF NOT EXISTS subscriptions_list_internal_id ON subscriptions (company_id, environment, internal_id, created_at, id);
DROP INDEX IF EXISTS subscriptions_tenant_customer;
CREATE INDEX subscriptions_tenant_customer ON subscriptions (company_id, environment, customer_id, created_at, id);
DROP INDEX IF EXISTS subscriptions_tenant_plan;
CREATE INDEX subscriptions_tenant_plan ON subscriptions (company_id, environment, plan_id, created_at, id);

-- plans (GET /plans): internal_id, cicle_frequency (column frequency).
CREATE INDEX IF NOT EXISTS plans_list_internal_id ON plans (company_id, environment, internal_id, created_at, id);
CREATE INDEX IF NOT EXISTS plans_list_frequency ON plans (company_id, environment, frequency, created_at, id);

-- prices (GET /prices): active.
CREATE INDEX IF NOT EXISTS prices_list_active ON prices (company_id, environment, active, created_at, id);

-- campaigns (GET /campaigns): status, template_id; a campaign's messages: status
-- (recipient: campaign_messages_recipient, a recipient's few messages).
CREATE INDEX IF NOT EXISTS campaigns_list_status ON campaigns (company_id, environment, status, created_at, id);
CREATE INDEX IF NOT EXISTS campaigns_list_template ON campaigns (company_id, environment, template_id, created_at, id);
CREATE INDEX IF NOT EXISTS campaign_messages_list_status ON campaign_messages (company_id, environment, campaign_id, status, created_at, id);

-- flows (GET /flows) had no list index; event (flows_by_event, also what the runner reads) goes on in list order.
CREATE INDEX IF NOT EXISTS flows_list ON flows (company_id, environment, created_at, id) WHERE deleted_at IS NULL;
DROP INDEX IF EXISTS flows_by_event;
CREATE INDEX flows_by_event ON flows (company_id, environment, event_type, created_at, id) WHERE deleted_at IS NULL;
-- a flow's runs: status (event_id: the unique flow_runs_once, one row).
CREATE INDEX IF NOT EXISTS flow_runs_list_status ON flow_runs (company_id, environment, flow_id, status, created_at, id);

-- issuing cards (GET /issuing/cards): status, type (customer_id: issuing_cards_customer).
CREATE INDEX IF NOT EXISTS issuing_cards_list_status ON issuing_cards (company_id, environment, status, created_at, id);
CREATE INDEX IF NOT EXISTS issuing_cards_list_type ON issuing_cards (company_id, environment, type, created_at, id);

-- utilities (GET /utilities): status, provider_id, reference, payment_id (utilities_one_per_bill is
-- partial: it cannot answer a plain provider filter).
CREATE INDEX IF NOT EXISTS utilities_list_status ON utilities (company_id, environment, status, created_at, id);
CREATE INDEX IF NOT EXISTS utilities_list_provider ON utilities (company_id, environment, provider_id, created_at, id);
CREATE INDEX IF NOT EXISTS utilities_list_reference ON utilities (company_id, environment, reference, created_at, id);
CREATE INDEX IF NOT EXISTS utilities_list_payment ON utilities (company_id, environment, payment_id, created_at, id);

-- a customer's wallet movements (GET /customers/{id}/transactions): type.
CREATE INDEX IF NOT EXISTS wallet_transactions_list_type ON wallet_transactions (company_id, environment, customer_id, type, created_at, id);

-- onboarded companies (GET /companies): status.
CREATE INDEX IF NOT EXISTS company_onboardings_list_status ON company_onboardings (company_id, environment, status, created_at, id);
