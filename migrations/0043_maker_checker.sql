-- Maker-checker on cash-outs (issue 30, docs/cashouts.md "Approval"): who created a cash-out and
-- who approved or rejected it (a principal: an API key's id today, a dashboard user's later), and
-- named secret keys besides the company's main one (`recaudo keys create`), so a second key can
-- approve what the first created.
ALTER TABLE cashouts ADD COLUMN created_by text;
ALTER TABLE cashouts ADD COLUMN approved_by text;
ALTER TABLE cashouts ADD COLUMN rejected_by text;
ALTER TABLE api_keys ADD COLUMN name text;
