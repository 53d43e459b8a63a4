import { z } from 'zod';
import { CURRENCIES } from '../../platform/money.ts';
import { text } from '../../platform/validation.ts';
import { TAX_BEHAVIORS, TAX_TYPES } from './tax.ts';

/** A tax as the API speaks it: a percent rate, the behavior, the DIAN tax (IVA by default). */
export const taxSchema = z.object({
  rate: z.number().min(0).max(100).describe('percent, e.g. 19; one of the rates DIAN lists for the tax type'),
  behavior: z.enum(TAX_BEHAVIORS).nullish().describe('exclusive (default: tax added on top) or inclusive (the amount already contains the tax)'),
  type: z.enum(TAX_TYPES).nullish().describe('iva (default, DIAN code 01) or inc (impuesto nacional al consumo, code 04)'),
});
export type TaxInput = z.infer<typeof taxSchema>;

const fields = {
  name: text(1, 255),
  unit_amount: z.number().int().min(1).describe('integer cents, at least 1'),
  currency: z.enum(CURRENCIES).optional().describe('default COP'),
  tax: taxSchema.nullish().describe('default: IVA 0 % exclusive'),
  active: z.boolean().nullish().describe('default true; inactive prices cannot be used by new lines'),
};

export const createPriceBody = z.object(fields);
export const updatePriceBody = z.object({ ...fields, name: fields.name.optional(), unit_amount: fields.unit_amount.optional() });
export type CreatePriceBody = z.infer<typeof createPriceBody>;
export type UpdatePriceBody = z.infer<typeof updatePriceBody>;

export const priceResponse = z.object({
  id: z.string(),
  name: z.string(),
  unit_amount: z.number().int().describe('cents'),
  currency: z.string(),
  tax: z.object({ rate: z.number(), behavior: z.enum(TAX_BEHAVIORS), type: z.enum(TAX_TYPES) }),
  active: z.boolean(),
  is_test: z.boolean(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type PriceResponse = z.infer<typeof priceResponse>;

export const idParams = z.object({ id: z.string() });
