import type { RequestContext, ServiceScope } from '../../platform/context.ts';
import { ApiError, validationError } from '../../platform/errors/api-error.ts';
import { prefixedId } from '../../platform/ids.ts';
import { formatPesos } from '../../platform/money.ts';
import { KEY_ACCOUNT_LIMIT_MINOR } from './service.ts';
import { customerExists } from '../accounts/queries.ts';
import { collectAmount, collectMetadata, fieldErrors, payerChargeValues, qrLabel, scopeOfContext } from './collect.ts';
import { QR_FAILURE_SCENARIO } from '../../rails/sandbox-table.ts';
import { chargeRail } from './rails.ts';
import { RTKEY_EXPIRES_IN, RTKEY_MINIMUM_PESOS, type RtkeyBody } from './collect-schemas.ts';
import { toChargeResponse } from './present.ts';
import type { ChargeResponse } from './schemas.ts';
import { EXPIRE_JOB, jobPayload, RECONCILE_JOB } from './jobs.ts';
import { requestOrigin, runOutsideCall } from '../../platform/outside-call.ts';
import { applyChargeTransition, insertCharge } from './transition.ts';

export const RTKEY_TEST_SCENARIOS = [QR_FAILURE_SCENARIO] as const;

/**
 * POST /charges/rtkey (docs/charges.md "Instant key"). Unlike the other rails, the QR is registered
 * with the instant-payment scheme before the charge exists, because a refused registration must
 * leave no charge (400 90100): through the outside-call protocol, the request commits its
 * idempotency claim and a safety job, the scheme is called outside any transaction, and only a registered QR
 * becomes a charge, created and submitted in one transaction (charge.created, charge.processing)
 * with its expire job. The answer
 * carries `qr: {payload, image}` and `url`, a page with the QR (the sandbox's "Simular pago").
 */
export async function createRtkeyCharge(ctx: RequestContext, body: RtkeyBody, idempotencyKey: string | null): Promise<ChargeResponse> {
  // Refused before anything is recorded when a live key has no connector for the scheme.
  const rail = await chargeRail(ctx.deps, ctx, 'rtkey');
  const { errors, add } = fieldErrors();
  const amount = await collectAmount(ctx, body.amount, RTKEY_MINIMUM_PESOS, add);
  // SPEC.md "Limits": a movement on an instant-key account is below COP 11,552,000; an rtkey charge is one.
  if (amount !== null && amount >= KEY_ACCOUNT_LIMIT_MINOR)
    add('amount', `an instant-key (rtkey) payment moves less than ${formatPesos(KEY_ACCOUNT_LIMIT_MINOR, 'COP')}`);
  const customerId = body.customer_id.toLowerCase();
  if (!(await customerExists(ctx.db, ctx, customerId))) add('customer_id', 'no such customer in this environment');
  const scenario = body.test_scenario ?? null;
  if (scenario !== null) {
    if (!ctx.isTest) add('test_scenario', 'is only accepted with a test key');
    else if (!(RTKEY_TEST_SCENARIOS as readonly string[]).includes(scenario))
      add('test_scenario', `must be one of ${RTKEY_TEST_SCENARIOS.join(', ')}`);
  }
  const metadata = collectMetadata(body.metadata, add);
  if (Object.keys(errors).length) throw validationError(errors);

  const now = ctx.deps.clock.now();
  const values = payerChargeValues(
    {
      method: 'rtkey',
      title: body.title ?? 'Pago con código QR',
      amount: amount!,
      customer_id: customerId,
      external_id: body.external_id ?? null,
      metadata: metadata ? JSON.stringify(metadata) : null,
      reference: body.reference ?? null,
      lifetimeMs: (body.expires_in ?? RTKEY_EXPIRES_IN.default) * 60_000,
      test_scenario: scenario,
    },
    now,
    idempotencyKey,
    // A retry after a run that died mid-registration registers the same reference again.
    ctx.recordedResourceId ?? prefixedId('ch', now.getTime()),
  );
  const company = await ctx.db.selectFrom('companies').select('name').where('id', '=', ctx.companyId).executeTakeFirstOrThrow();
  return runOutsideCall(requestOrigin(ctx), {
    rail: 'rtkey',
    // No charge yet: the commit is the idempotency claim, naming the charge id the QR is registered
    // under (a retry after a lost answer registers the same reference: the scheme answers the same
    // QR), and the safety job: if no charge holds the reference by then, the QR the scheme may have
    // registered is withdrawn (nobody can pay a QR without a charge), never guessed either way.
    record: async (trx) => {
      const safetyJobId = await ctx.deps.jobs.enqueue(
        trx,
        RECONCILE_JOB,
        { company_id: ctx.companyId, environment: ctx.environment, charge_id: values.id, unregistered_qr: true },
        new Date(now.getTime() + ctx.deps.config.chargeReconcileDelayMs),
      );
      return { recorded: values, resourceId: values.id, safetyJobId };
    },
    call: () =>
      rail.registerQr({
        reference: values.id,
        amount: amount!,
        currency: 'COP',
        merchant: company.name,
        label: qrLabel({ id: values.id, reference: values.reference ?? null }),
        expiresAt: new Date(values.expires_at!),
        test_scenario: scenario,
      }),
    settle: async (trx, _values, registered) => {
      const scope: ServiceScope = { ...scopeOfContext(ctx), db: trx, deps: ctx.deps };
      const created = await insertCharge(trx, scope, values);
      const processing = await applyChargeTransition(
        trx,
        scope,
        created.id,
        'submit',
        { network_id: registered.networkId, qr_payload: registered.payload },
        created,
      );
      await ctx.deps.jobs.enqueue(trx, EXPIRE_JOB, jobPayload(processing, {}), new Date(processing.expires_at!));
      return toChargeResponse(processing, ctx.deps.config.baseUrl);
    },
    // A registration that failed (or never answered) leaves no charge: 400 90100; the safety job
    // withdraws the QR should the scheme have registered it after all.
    unknown: (_values, error) => {
      throw new ApiError('qr_generation_failed', {
        message: `${(error as Error)?.message ?? 'The QR registration failed.'} No charge was created; a QR the scheme may hold is withdrawn.`,
      });
    },
    // The QR is registered but no charge holds it yet: a retry with the same x-idempotency value
    // registers the same reference again (the scheme answers the same QR) and saves the charge.
    lost: () =>
      new ApiError('service_unavailable', {
        message: 'The QR was registered but the charge could not be saved; nothing was charged. Retry with the same x-idempotency value.',
      }),
  });
}
