import { createHash } from 'node:crypto';
import { backgroundContext, type AppDeps } from '../../platform/context.ts';
import { ApiError } from '../../platform/errors/api-error.ts';
import { createCustomer } from '../customers/service.ts';
import { PLAN_ID } from './plans.ts';
import { createSubscription } from './service.ts';
import type { PlanRow } from './tables.ts';
import './tables.ts';

/**
 * The public plan page (docs/subscriptions.md "Plan page"): a payer subscribes to a plan by
 * themselves. The page finds the plan by its id alone (the link is public, as a payment link is).
 */
export async function findPlanForPage(deps: AppDeps, id: string): Promise<{ plan: PlanRow; companyName: string } | null> {
  if (!PLAN_ID.test(id)) return null;
  const row = await deps.database.db
    .selectFrom('plans')
    .innerJoin('companies', 'companies.id', 'plans.company_id')
    .selectAll('plans')
    .select('companies.name as company_name')
    .where('plans.id', '=', id)
    .executeTakeFirst();
  if (!row) return null;
  const { company_name, ...plan } = row;
  return { plan: plan as PlanRow, companyName: company_name };
}

export interface PagePayer {
  first_name: string;
  last_name: string | null;
  email: string | null;
  phone: string | null;
}

/**
 * Subscribes the payer: the customer and the subscription (request mode: each cycle's link goes by
 * the payer's phone or e-mail) in one transaction, exactly as POST /customers and
 * POST /subscriptions would. The form's token names the subscription, so a form sent twice answers
 * the first subscription. Field problems are the API's validation errors.
 */
export async function subscribeFromPage(
  deps: AppDeps,
  plan: PlanRow,
  payer: PagePayer,
  formToken: string,
): Promise<{ subscriptionId: string; created: boolean }> {
  const tenant = { companyId: plan.company_id, environment: plan.environment };
  const pageToken = createHash('sha256').update(formToken).digest('base64url');
  const existing = () =>
    deps.database.db.selectFrom('subscriptions').select('id').where('page_token', '=', pageToken).where('plan_id', '=', plan.id).executeTakeFirst();
  const before = await existing();
  if (before) return { subscriptionId: before.id, created: false };
  try {
    const id = await deps.database.db.transaction().execute(async (trx) => {
      const ctx = { ...backgroundContext(deps, tenant), db: trx };
      const customer = await createCustomer(ctx, {
        first_name: payer.first_name,
        last_name: payer.last_name,
        email: payer.email,
        phone: payer.phone,
        metadata: { source: 'plan_page' },
      });
      const sub = await createSubscription(ctx, { customer_id: customer.id, plan_id: plan.id, payment_mode: 'request' });
      await trx.updateTable('subscriptions').set({ page_token: pageToken }).where('id', '=', sub.id).execute();
      return sub.id;
    });
    return { subscriptionId: id, created: true };
  } catch (error) {
    // The same form sent twice at once: the other request's subscription is the answer.
    const twin = await existing();
    if (twin && !(error instanceof ApiError)) return { subscriptionId: twin.id, created: false };
    throw error;
  }
}
