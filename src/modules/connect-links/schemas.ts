import { z } from 'zod';
import { httpsUrl, uuid } from '../../platform/validation.ts';

export const CONNECT_LINK_STATUSES = ['active', 'used', 'deleted'] as const;

export const createConnectLinkBody = z.object({
  customer_id: uuid.describe('the customer whose account the payer will connect'),
  single_use: z.boolean().describe('true: the link stops working after one account or card is enrolled'),
  redirect_url: httpsUrl(255).nullish().describe('https, at most 255 characters; where the payer goes after connecting'),
});
export type CreateConnectLinkBody = z.infer<typeof createConnectLinkBody>;

export const connectLinkResponse = z.object({
  id: z.string().describe('cl_…'),
  customer_id: z.string(),
  single_use: z.boolean(),
  redirect_url: z.string().nullable(),
  url: z.string().describe('the page to send to the payer'),
  status: z.enum(CONNECT_LINK_STATUSES),
  created_at: z.string(),
  is_test: z.boolean(),
});
export type ConnectLinkResponse = z.infer<typeof connectLinkResponse>;

export const idParams = z.object({ id: z.string() });
