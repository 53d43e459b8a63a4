import { z } from 'zod';
import { listQuerySchema, type ListSpec } from '../../platform/lists/lists.ts';
import { TEMPLATE_PROVIDERS, TEMPLATE_STAGES, TEMPLATE_STATUSES } from './tables.ts';

export const templateResponse = z.object({
  id: z.string().describe('tpl_…'),
  name: z.string(),
  status: z.enum(TEMPLATE_STATUSES).describe('approval state at the messaging provider'),
  stage: z.enum(TEMPLATE_STAGES).describe('when the message is sent'),
  provider: z.enum(TEMPLATE_PROVIDERS),
  predefined: z.boolean().describe('true: fixed Recaudo text; false: has company-filled variables {{optional_1}}…'),
  selectable: z.boolean().describe('true: a payment may use it as template_id'),
  body: z.string().describe('Spanish text with {{variables}}'),
  created_at: z.string(),
  updated_at: z.string(),
});
export type TemplateResponse = z.infer<typeof templateResponse>;

export const templateList: ListSpec<'status' | 'stage' | 'provider' | 'predefined' | 'selectable', 'name' | 'created_at' | 'updated_at'> = {
  filters: ['status', 'stage', 'provider', 'predefined', 'selectable'],
  sorts: ['name', 'created_at', 'updated_at'],
};
export const templateListQuery = listQuerySchema(templateList);
