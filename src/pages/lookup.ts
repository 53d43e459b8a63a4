import type { AppDeps, ServiceScope } from '../platform/context.ts';
import type { PaymentRow } from '../modules/payments/queries.ts';

/** The service scope of a payer page: the payment's own company and environment. */
export function scopeOf(payment: PaymentRow, deps: AppDeps): ServiceScope {
  return { companyId: payment.company_id, environment: payment.environment, db: deps.database.db, deps };
}
