import type { FastifyInstance } from 'fastify';
import type { AppDeps } from '../platform/context.ts';
import { ApiError } from '../platform/errors/api-error.ts';
import { findPlanForPage, subscribeFromPage } from '../modules/subscriptions/page.ts';
import type { PlanRow } from '../modules/subscriptions/tables.ts';
import type { FormTokens } from './csrf.ts';
import { sendPage } from './html.ts';
import { normalisePhone, type FieldErrors } from './sandbox.ts';
import { messagePage, notFoundPage, planPage, subscribedPage } from './views.ts';

const EMAIL = /^[^\s@]{1,64}@[^\s@]{1,185}\.[^\s@]{2,}$/;
const fieldOf = (body: unknown, name: string): string => {
  const v = (body as Record<string, unknown> | undefined)?.[name];
  return typeof v === 'string' ? v.trim() : '';
};

/**
 * The plan page at a plan's `link` (/plan/{id}, docs/subscriptions.md "Plan page"): the plan's
 * terms and a form (name, phone or e-mail, the authorization to be sent its collections); sending
 * it subscribes the payer through the subscriptions module, once per form. Registered inside the
 * payer pages' scope (form parser, error pages, rate limit).
 */
export function planPages(scope: FastifyInstance, deps: AppDeps, tokens: FormTokens): void {
  const show = (
    plan: PlanRow,
    companyName: string,
    status: number,
    values: Record<string, string>,
    errors: FieldErrors,
    reply: Parameters<typeof sendPage>[0],
  ) =>
    sendPage(
      reply,
      status,
      planPage({
        id: plan.id,
        name: plan.name,
        description: plan.description,
        amount: plan.amount,
        currency: plan.currency,
        frequency: plan.frequency,
        cycles: plan.cycles,
        trialDays: plan.trial_days,
        companyName,
        test: plan.environment === 'test',
        token: tokens.issue(plan.id, deps.clock.now()),
        values,
        errors,
      }),
    );

  scope.get('/:id', { schema: { hide: true } }, async (req, reply) => {
    const found = await findPlanForPage(deps, (req.params as { id: string }).id);
    if (!found) return sendPage(reply, 404, notFoundPage());
    return show(found.plan, found.companyName, 200, {}, {}, reply);
  });

  scope.post('/:id', { schema: { hide: true } }, async (req, reply) => {
    const found = await findPlanForPage(deps, (req.params as { id: string }).id);
    if (!found) return sendPage(reply, 404, notFoundPage());
    const { plan, companyName } = found;
    const token = fieldOf(req.body, 'token');
    if (!tokens.verify(plan.id, token, deps.clock.now())) {
      return sendPage(
        reply,
        403,
        messagePage({
          title: 'Formulario vencido',
          heading: 'El formulario venció',
          text: 'Vuelve a abrir la página del plan y envía tus datos de nuevo.',
          link: { href: `/plan/${plan.id}`, label: 'Volver al plan' },
        }),
      );
    }
    const values = {
      first_name: fieldOf(req.body, 'first_name').slice(0, 100),
      last_name: fieldOf(req.body, 'last_name').slice(0, 100),
      phone: fieldOf(req.body, 'phone').slice(0, 20),
      email: fieldOf(req.body, 'email').slice(0, 255),
      acepto: fieldOf(req.body, 'acepto'),
    };
    const errors: FieldErrors = {};
    const phone = values.phone ? normalisePhone(values.phone) : null;
    if (!values.first_name) errors.first_name = 'Escribe tu nombre.';
    if (values.phone && !phone) errors.phone = 'Escribe un celular de Colombia de 10 dígitos, por ejemplo 300 123 4567.';
    if (values.email && !EMAIL.test(values.email)) errors.email = 'Escribe un correo válido, por ejemplo ana@correo.com.';
    if (!values.phone && !values.email) errors.phone = 'Escribe tu celular o tu correo para recibir los cobros.';
    if (values.acepto !== 'si') errors.acepto = 'Marca la casilla para autorizar el envío de los cobros.';
    if (Object.keys(errors).length) return show(plan, companyName, 422, values, errors, reply);
    try {
      const { subscriptionId } = await subscribeFromPage(
        deps,
        plan,
        { first_name: values.first_name, last_name: values.last_name || null, email: values.email.toLowerCase() || null, phone },
        token,
      );
      return sendPage(reply, 200, subscribedPage({ planName: plan.name, companyName, subscriptionId, by: phone ? 'phone' : 'email' }));
    } catch (error) {
      if (!(error instanceof ApiError) || error.status !== 422) throw error;
      // A rule of the API the form did not check (a name the customers module refuses...).
      return show(plan, companyName, 422, values, { first_name: 'Revisa tus datos: no pudimos crear la suscripción con ellos.' }, reply);
    }
  });
}
