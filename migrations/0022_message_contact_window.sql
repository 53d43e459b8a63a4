-- Collection messages held to the next lawful contact window (Ley 2300 de 2023; docs/subscriptions.md).
ALTER TABLE payment_messages ADD COLUMN held_until timestamptz;
