-- Receipts to payers (issue 30, docs/payments.md "Receipts"): a payment paid through Recaudo sends
-- its payer a receipt by the payment's channel, unless the payment was created with
-- receipts: false. The receipt is one more payment message, of kind 'receipt'.
ALTER TABLE payments ADD COLUMN receipts boolean NOT NULL DEFAULT true;
ALTER TABLE payment_messages DROP CONSTRAINT IF EXISTS payment_messages_kind_check;
ALTER TABLE payment_messages ADD CONSTRAINT payment_messages_kind_check CHECK (kind IN ('link', 'resend', 'cancellation', 'receipt'));
