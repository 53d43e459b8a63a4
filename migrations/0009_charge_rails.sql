-- Charges the payer acts on (docs/charges.md "Banklink", "Instant key", "Wallet request-to-pay"):
-- a banklink (bank-transfer link), rtkey (instant-key QR), walleta or walletb (wallet
-- request-to-pay) charge is a row of `charges` with its own payment_method_type, going through the
-- same states, transition table and events as card and account charges.

ALTER TABLE charges DROP CONSTRAINT charges_payment_method_type_check;
ALTER TABLE charges ADD CONSTRAINT charges_payment_method_type_check
  CHECK (payment_method_type IN ('card', 'account', 'banklink', 'rtkey', 'walleta', 'walletb'));

-- A card or account charge debits exactly one of the two; a walletb request names the customer's
-- wallet account it was matched to (account_id); the others name neither.
ALTER TABLE charges DROP CONSTRAINT charges_check;
ALTER TABLE charges ADD CONSTRAINT charges_method_source_check CHECK (
  CASE payment_method_type
    WHEN 'card' THEN account_id IS NULL AND card_id IS NOT NULL
    WHEN 'account' THEN account_id IS NOT NULL AND card_id IS NULL
    WHEN 'walletb' THEN account_id IS NOT NULL AND card_id IS NULL
    ELSE account_id IS NULL AND card_id IS NULL
  END
);

-- banklink: the payer's bank and where the payer goes back to.
ALTER TABLE charges ADD COLUMN bank_id uuid;
ALTER TABLE charges ADD COLUMN redirect_url text;
-- banklink and rtkey: the company's reference shown to the payer (rtkey: EMVCo tag 62).
ALTER TABLE charges ADD COLUMN reference text;
-- walleta, walletb: the payer's wallet phone (E.164, +57); walletb: the payer's document.
ALTER TABLE charges ADD COLUMN phone text;
ALTER TABLE charges ADD COLUMN document_type text;
ALTER TABLE charges ADD COLUMN document_number text;
-- rtkey: the EMVCo payload the rail registered (the image is drawn from it).
ALTER TABLE charges ADD COLUMN qr_payload text;
-- banklink, rtkey, walletb: when an open charge fails with remarks EXPIRED (charges.expire job).
ALTER TABLE charges ADD COLUMN expires_at timestamptz;

ALTER TABLE charges ADD CONSTRAINT charges_rail_fields_check CHECK (
  (payment_method_type <> 'banklink' OR (bank_id IS NOT NULL AND redirect_url IS NOT NULL AND expires_at IS NOT NULL))
  AND (payment_method_type <> 'rtkey' OR expires_at IS NOT NULL)
  AND (payment_method_type NOT IN ('walleta', 'walletb') OR phone IS NOT NULL)
  AND (payment_method_type <> 'walletb' OR (document_type IS NOT NULL AND document_number IS NOT NULL AND expires_at IS NOT NULL))
);

-- The banklink duplicate window (same customer, bank and amount within 2 minutes) is checked
-- under a transaction-scoped advisory lock on that key; this index serves the check.
CREATE INDEX charges_banklink_recent ON charges (company_id, environment, customer_id, bank_id, amount, created_at)
  WHERE payment_method_type = 'banklink';

-- At most one open walleta request per external_id, and one open walletb request per wallet
-- account, whatever the application does (the services check first, under an advisory lock, and
-- answer 10141).
CREATE UNIQUE INDEX charges_walleta_open ON charges (company_id, environment, external_id)
  WHERE payment_method_type = 'walleta' AND status IN ('created', 'processing');
CREATE UNIQUE INDEX charges_walletb_open ON charges (company_id, environment, account_id)
  WHERE payment_method_type = 'walletb' AND status IN ('created', 'processing');
