import { z } from 'zod';
import { listQuerySchema, type ListSpec } from '../../platform/lists/lists.ts';
import { looseBoolean, text, uuid } from '../../platform/validation.ts';
import { bankSummary } from '../banks/schemas.ts';
import { customerResponse } from '../customers/schemas.ts';

export const ACCOUNT_SUBTYPES = ['SAVINGS', 'CHECKING', 'ELECTRONIC_DEPOSIT', 'KEY', 'WALLET'] as const;
export const ACCOUNT_STATUSES = ['PENDING', 'ACTIVE', 'REJECTED', 'INACTIVE'] as const;

export const createAccountBody = z.object({
  subtype: z.enum(ACCOUNT_SUBTYPES),
  account_number: z
    .string()
    .trim()
    .min(1, 'is required')
    .max(100, 'must be at most 100 characters')
    .describe('bank account number; for KEY the instant key (an alphanumeric key starts with @); for WALLET the company id cmp_…'),
  customer_id: uuid.describe('a customer of the company, in the same environment'),
  bank_id: uuid.nullish().describe('required for SAVINGS and CHECKING; WALLET always uses the platform bank'),
  authorization: looseBoolean
    .nullish()
    .describe('true when the holder authorized automatic debits (default false: the holder never gets the enrollment request)'),
  're-enrollment': looseBoolean.nullish().describe('true when it re-links an account that existed before'),
  re_enrollment: looseBoolean.nullish().describe('alias of re-enrollment'),
  re_enroll: looseBoolean.nullish().describe('alias of re-enrollment'),
  external_id: text(1, 100).nullish(),
  related_customer_id: uuid.nullish().describe('a related customer of the company (e.g. the payer when the holder is someone else)'),
  related_to: uuid.nullish().describe('alias of related_customer_id'),
  title: text(1, 255).nullish().describe('default: bank name and the last four digits'),
});
export type CreateAccountBody = z.infer<typeof createAccountBody>;

export const validateAccountBody = z.object({
  otp: z.string().max(20).nullish().describe('code the holder received; in test 123456 is right. Optional when the holder confirmed in the app'),
});

/** The owner as SPEC.md's Account shows it: a subset of the customer resource. */
export const accountCustomer = customerResponse.pick({
  id: true,
  first_name: true,
  last_name: true,
  email: true,
  phone: true,
  document_type: true,
  document_number: true,
  created_at: true,
  is_test: true,
});

export const accountResponse = z.object({
  id: z.string().describe('UUID'),
  title: z.string(),
  subtype: z.enum(ACCOUNT_SUBTYPES),
  status: z.enum(ACCOUNT_STATUSES),
  authorization: z.boolean(),
  debit_authorized: z
    .boolean()
    .describe('true once the holder authorized debits and the bank enrolled the account; false for a payout destination (authorization false)'),
  customer_id: z.string(),
  re_enroll: z.boolean(),
  external_id: z.string().nullable(),
  related_customer_id: z.string().nullable(),
  account_number: z.string().describe('masked: only the last four characters are shown'),
  bank_id: z.string().nullable(),
  bank: bankSummary.nullable(),
  customer: accountCustomer.nullable(),
  created_at: z.string(),
  updated_at: z.string(),
  is_test: z.boolean(),
});
export type AccountResponse = z.infer<typeof accountResponse>;

export const keyLookupResponse = z.object({
  document_type: z.string(),
  document_number: z.string(),
  first_name: z.string(),
  last_name: z.string(),
  status: z.string().describe('ACTIVE or INACTIVE'),
  key_type: z.enum(['ALPHANUM', 'PHONE', 'EMAIL', 'ID']),
  key_value: z.string(),
  bank: z.object({ id: z.string(), name: z.string(), logo: z.string() }),
});

export const accountList: ListSpec<'customer_id' | 'status', 'created_at' | 'updated_at'> = {
  filters: ['customer_id', 'status'],
  sorts: ['created_at', 'updated_at'],
  perPageAliases: ['limit'],
};
export const customerAccountList: ListSpec<'status', 'created_at' | 'updated_at'> = {
  filters: ['status'],
  sorts: ['created_at', 'updated_at'],
  perPageAliases: ['limit'],
};

export const accountListQuery = listQuerySchema(accountList).extend({
  customer_id: z.string().optional().describe('alias of filter[customer_id]'),
  status: z
    .string()
    .optional()
    .describe(`alias of filter[status]: ${ACCOUNT_STATUSES.join(', ')}`),
});
export const customerAccountListQuery = listQuerySchema(customerAccountList).extend({
  status: z
    .string()
    .optional()
    .describe(`alias of filter[status]: ${ACCOUNT_STATUSES.join(', ')}`),
});

export const idParams = z.object({ id: z.string() });
export const keyParams = z.object({ key: z.string() });
