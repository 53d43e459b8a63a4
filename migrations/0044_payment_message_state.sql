-- The state of a payment's latest message, on the payment (issue 30, docs/payments.md "Messages"):
-- a live message no channel can carry fails at once (remarks channel_not_configured) and the
-- company sees it on the payment, in lists too, without a query per row. Written in the same
-- transaction as the message's own change.
ALTER TABLE payments ADD COLUMN message_status text;
ALTER TABLE payments ADD COLUMN message_remarks text;
