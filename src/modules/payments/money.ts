/** Money helpers live in the platform (shared by payments, charges and the ledger). */
export * from '../../platform/money.ts';
