import type { Executor } from '../../platform/db/database.ts';
import type { ChargeRow } from './present.ts';
import { CHARGE_ID } from './queries.ts';

/** A banklink or rtkey charge (the payer's bank or QR page), with its company's name. */
export async function findChargeForPayer(db: Executor, id: string): Promise<{ charge: ChargeRow; companyName: string } | null> {
  if (!CHARGE_ID.test(id)) return null;
  const row = await db
    .selectFrom('charges')
    .innerJoin('companies', 'companies.id', 'charges.company_id')
    .selectAll('charges')
    .select('companies.name as company_name')
    .where('charges.id', '=', id)
    .where('charges.payment_method_type', 'in', ['banklink', 'rtkey'])
    .executeTakeFirst();
  if (!row) return null;
  const { company_name, ...charge } = row;
  return { charge: charge as ChargeRow, companyName: company_name };
}
