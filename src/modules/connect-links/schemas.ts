import { z } from 'zod';
import { httpsUrl, uuid } from '../../platform/validation.ts';
import { allowsField, CONNECT_BRAND_KEYS, ENROLLABLE_METHODS } from '../payments/allows.ts';

export const CONNECT_LINK_STATUSES = ['active', 'used', 'deleted'] as const;

export const createConnectLinkBody = z.object({
  customer_id: uuid.describe('the customer whose account the payer will connect'),
  single_use: z.boolean().describe('true: the link stops working after one account or card is enrolled'),
  redirect_url: httpsUrl(255).nullish().describe('https, at most 255 characters; where the payer goes after connecting'),
  allows: allowsField(
    ENROLLABLE_METHODS,
    CONNECT_BRAND_KEYS,
    'what the page offers to enroll (card; banklink: a savings or checking account; walleta: Nequi; walletb: Daviplata); default all',
  ).nullish(),
});
export type CreateConnectLinkBody = z.infer<typeof createConnectLinkBody>;

export const connectLinkResponse = z.object({
  id: z.string().describe('cl_…'),
  customer_id: z.string(),
  single_use: z.boolean(),
  redirect_url: z.string().nullable(),
  allows: z.array(z.enum(ENROLLABLE_METHODS)).describe('what the page offers to enroll'),
  url: z.string().describe('the page to send to the payer'),
  status: z.enum(CONNECT_LINK_STATUSES),
  created_at: z.string(),
  is_test: z.boolean(),
});
export type ConnectLinkResponse = z.infer<typeof connectLinkResponse>;

export const idParams = z.object({ id: z.string() });
