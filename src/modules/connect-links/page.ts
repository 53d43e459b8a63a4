import { createHash } from 'node:crypto';
import type { Selectable } from 'kysely';
import { backgroundContext, type AppDeps, type RequestContext } from '../../platform/context.ts';
import type { Executor } from '../../platform/db/database.ts';
import { ApiError, validationError } from '../../platform/errors/api-error.ts';
import { prefixedId } from '../../platform/ids.ts';
import { inTenant, type Tenant } from '../../platform/scope.ts';
import { applyTransition } from '../../platform/state-machine.ts';
import { createAccount, getAccount, validateAccount } from '../accounts/service.ts';
import type { AccountResponse, CreateAccountBody } from '../accounts/schemas.ts';
import { createCardFromProviderToken, createCardFromToken, createToken, deleteCard, getCard, providerVault } from '../cards/service.ts';
import { loadCustomer } from '../customers/service.ts';
import type { CardResponse, CreateTokenBody } from '../cards/schemas.ts';
import { findBank } from '../banks/service.ts';
import type { EnrollableMethod } from '../payments/allows.ts';
import { CONNECT_LINK_MACHINE, linkAllows, toConnectLinkResponse, type ConnectLinkRow } from './service.ts';
import type { ConnectLinkEnrollmentsTable } from './tables.ts';
import './tables.ts';

/**
 * The connect link's payer page (docs/pages.md "Connect-link page"): the customer of the link
 * enrolls a bank account, a wallet account or a card by themselves. The resource starts exactly as
 * the API's POST /accounts or POST /tokens + POST /cards/tokenized would (those modules' functions,
 * their validation, rails and events); this module adds the link's part: one transaction that
 * locks the link, creates the resource, records the enrollment and moves the link
 * (`connect_link.completed`), so a single-use link enrolls at most one resource.
 */

export type EnrollmentRow = Selectable<ConnectLinkEnrollmentsTable>;

/** The token in `url` (32 base62 characters); anything else finds nothing without a query. */
const LINK_TOKEN = /^[A-Za-z0-9]{32}$/;

export async function findConnectLinkForPage(deps: AppDeps, token: string): Promise<{ link: ConnectLinkRow; companyName: string } | null> {
  if (!LINK_TOKEN.test(token)) return null;
  const row = await deps.database.db
    .selectFrom('connect_links')
    .innerJoin('companies', 'companies.id', 'connect_links.company_id')
    .selectAll('connect_links')
    .select('companies.name as company_name')
    .where('connect_links.token', '=', token)
    .executeTakeFirst();
  if (!row) return null;
  const { company_name, ...link } = row;
  return { link: link as ConnectLinkRow, companyName: company_name };
}

const tenantOf = (link: ConnectLinkRow): Tenant => ({ companyId: link.company_id, environment: link.environment });

/** A request-shaped context of the link's company and environment (the pages have no API key). */
export function linkContext(deps: AppDeps, link: ConnectLinkRow): RequestContext {
  return backgroundContext(deps, tenantOf(link));
}

/** The form's identity: a hash of the page's form token (never the token itself). */
function formKeyOf(formToken: string): string {
  return createHash('sha256').update(`connect-form\n${formToken}`).digest('base64url');
}

function enrollmentByForm(db: Executor, link: ConnectLinkRow, formKey: string): Promise<EnrollmentRow | undefined> {
  return db
    .selectFrom('connect_link_enrollments')
    .selectAll()
    .$call(inTenant(tenantOf(link)))
    .where('connect_link_id', '=', link.id)
    .where('form_key', '=', formKey)
    .executeTakeFirst();
}

/**
 * A card the payer's browser tokenized at the provider (the page's live card form): the provider's
 * single-use token and what its tokenization answered; the payer accepted the provider's contracts.
 */
export interface ProviderCard {
  provider_token: string;
  brand: string;
  last4: string;
  exp_month: string;
  exp_year: string;
  holder_name: string;
}

/**
 * What the payer enrolls: an account (bank or wallet), a card (the sandbox's server-side form) or
 * a card the browser tokenized at the provider (`providerCard`, with the payer's acceptance of the
 * provider's contracts); the customer is the link's.
 */
export type EnrollRequest =
  | { kind: 'account'; account: Pick<CreateAccountBody, 'subtype' | 'bank_id' | 'account_number'> }
  | { kind: 'card'; card: CreateTokenBody }
  | { kind: 'providerCard'; card: ProviderCard; acceptTerms: boolean };

/**
 * How the link's page takes a card (docs/pages.md "Connect-link page"): `browser`, a connector that
 * keeps cards and tokenizes in the payer's browser (the form sends the card straight to the
 * provider's `url` with the company's `publicKey`; the page posts only the provider's token), with
 * its contracts when the provider needs the payer's consent; `server`, the built-in sandbox's form
 * (or live without any card connector: the card is saved here and cannot be charged until one
 * serves cards); `unavailable`, a connector keeps cards but cannot tokenize in the browser (live
 * card data never comes to this page), or the customer has no e-mail the provider files it under.
 */
export type LinkCardMode =
  | { mode: 'server' }
  | {
      mode: 'browser';
      url: string;
      publicKey: string;
      origin: string;
      /** The provider's name (its rail's) and its contracts, when the payer must accept them first. */
      provider: string;
      contracts: (() => Promise<{ permalink: string; personalDataPermalink: string }>) | null;
    }
  | { mode: 'unavailable'; reason: 'no_browser_tokenization' | 'customer_email' };

export async function linkCardMode(deps: AppDeps, link: ConnectLinkRow): Promise<LinkCardMode> {
  const ctx = linkContext(deps, link);
  if (!(await providerVault(ctx))) return { mode: 'server' };
  const port = (await deps.rails.connectors.find(ctx, 'card'))!;
  const tokenization = port.browserTokenization?.();
  let origin: string | null = null;
  try {
    origin = tokenization ? new URL(tokenization.url).origin : null;
  } catch {
    origin = null;
  }
  if (!tokenization || !origin || !/^https?:\/\//.test(origin)) return { mode: 'unavailable', reason: 'no_browser_tokenization' };
  // The provider files the card under the customer's e-mail (cards/service.ts customerEmail).
  const customer = await loadCustomer(ctx, link.customer_id).catch(() => null);
  if (customer && !customer.email) return { mode: 'unavailable', reason: 'customer_email' };
  return {
    mode: 'browser',
    url: tokenization.url,
    publicKey: tokenization.publicKey,
    origin,
    provider: port.name,
    contracts: port.consentRequired && port.contracts ? () => port.contracts!() : null,
  };
}

/** The wallets of `walleta` (Nequi) and `walletb` (Daviplata) by their bank code (PRODUCT.md's brand mapping). */
export const WALLET_BANK_CODES: Readonly<Record<'walleta' | 'walletb', string>> = { walleta: '1507', walletb: '1551' };

/** What the link's page offers (its `allows`): the sections it shows and the forms it takes. */
export function offeredByLink(link: ConnectLinkRow): { card: boolean; bankAccount: boolean; walletBankCodes: string[] } {
  const allows = linkAllows(link);
  return {
    card: allows.includes('card'),
    bankAccount: allows.includes('banklink'),
    walletBankCodes: (['walleta', 'walletb'] as const).filter((m) => allows.includes(m)).map((m) => WALLET_BANK_CODES[m]),
  };
}

/** What a request enrolls in `allows` terms: a wallet by its bank's code; another deposit account is a bank account. */
async function enrolledMethod(deps: AppDeps, request: EnrollRequest): Promise<EnrollableMethod> {
  if (request.kind === 'card' || request.kind === 'providerCard') return 'card';
  if (request.account.subtype !== 'ELECTRONIC_DEPOSIT' || !request.account.bank_id) return 'banklink';
  const bank = await findBank(deps.database.db, request.account.bank_id);
  if (bank?.code === WALLET_BANK_CODES.walleta) return 'walleta';
  if (bank?.code === WALLET_BANK_CODES.walletb) return 'walletb';
  return 'banklink';
}

export type EnrollOutcome =
  | { status: 'enrolled'; enrollment: EnrollmentRow; created: boolean }
  /** The link is used up or deleted (read under its lock). */
  | { status: 'gone'; link: ConnectLinkRow };

/**
 * Enrolls the payer's account or card through the link, once per form token. The holder's
 * authorization is the page's checkbox (the caller checks it). Errors are the API's (validation,
 * card 10104/10102/10122, rail_not_configured) and nothing is kept when one is thrown.
 */
export async function enrollThroughLink(deps: AppDeps, link: ConnectLinkRow, formToken: string, request: EnrollRequest): Promise<EnrollOutcome> {
  const db = deps.database.db;
  const formKey = formKeyOf(formToken);
  const earlier = await enrollmentByForm(db, link, formKey);
  if (earlier) return { status: 'enrolled', enrollment: earlier, created: false };
  if (link.status !== 'active') return { status: 'gone', link };
  // The link's `allows` (the page shows only those forms; a crafted POST is refused, nothing kept).
  const method = await enrolledMethod(deps, request);
  if (!linkAllows(link).includes(method)) throw validationError({ allows: [`this link does not offer ${method}`] });

  const ctx = linkContext(deps, link);
  // Card data becomes a token first, outside any transaction (a connector's vault is called here),
  // as a browser does with POST /tokens; the card number lives only in this request.
  let cardToken: string | null = null;
  let vaultedCard: CardResponse | null = null;
  if (request.kind === 'providerCard') {
    // The payer's browser tokenized the card at the provider: only its token is here. Saving it
    // calls the provider, outside the link's transaction, with the payer's consent recorded.
    vaultedCard = await createCardFromProviderToken(ctx, {
      ...request.card,
      customer_id: link.customer_id,
      authorization: true,
      accept_terms: request.acceptTerms,
      asserted_by: `connect_link:${link.id}`,
    });
  } else if (request.kind === 'card') {
    cardToken = (await createToken(ctx, request.card)).id;
    // A connector keeps cards at the provider: saving calls it, so it too runs outside the
    // link's transaction; if the link is gone meanwhile that card is deleted again.
    if (await providerVault(ctx)) {
      vaultedCard = await createCardFromToken(ctx, { card_token: cardToken, customer_id: link.customer_id, authorization: true });
    }
  }

  const afterCommit: (() => void)[] = [];
  let outcome: EnrollOutcome;
  try {
    outcome = await db.transaction().execute(async (trx): Promise<EnrollOutcome> => {
      // The link's row lock orders every enrollment of one link: a used-up link is seen as such.
      const locked = await trx
        .selectFrom('connect_links')
        .selectAll()
        .$call(inTenant(tenantOf(link)))
        .where('id', '=', link.id)
        .forUpdate()
        .executeTakeFirstOrThrow();
      const twin = await enrollmentByForm(trx, link, formKey);
      if (twin) return { status: 'enrolled', enrollment: twin, created: false };
      if (locked.status !== 'active') return { status: 'gone', link: locked };

      const inner: RequestContext = { ...ctx, db: trx, afterCommit: (fn) => afterCommit.push(fn) };
      let account: AccountResponse | null = null;
      let card: CardResponse | null = vaultedCard;
      if (request.kind === 'account') {
        account = await createAccount(inner, { ...request.account, customer_id: link.customer_id, authorization: true });
      } else if (!card) {
        card = await createCardFromToken(inner, { card_token: cardToken!, customer_id: link.customer_id, authorization: true });
      }
      const now = deps.clock.now();
      const enrollment = await trx
        .insertInto('connect_link_enrollments')
        .values({
          company_id: link.company_id,
          environment: link.environment,
          id: prefixedId('cle', now.getTime()),
          connect_link_id: link.id,
          form_key: formKey,
          account_id: account?.id ?? null,
          card_id: card?.id ?? null,
          created_at: now,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
      await applyTransition(trx, inner, CONNECT_LINK_MACHINE, {
        table: 'connect_links',
        row: locked,
        action: locked.single_use ? 'use' : 'complete',
        now,
        touch: false,
        set: () => ({ uses: locked.uses + 1 }),
        present: (row) => ({ ...toConnectLinkResponse(row, deps.config.baseUrl), account, card }),
      });
      return { status: 'enrolled', enrollment, created: true };
    });
  } catch (error) {
    if (vaultedCard) await deleteCard(ctx, vaultedCard.id);
    // The same form sent twice at once: the other request's enrollment is the answer.
    const twin = error instanceof ApiError ? undefined : await enrollmentByForm(db, link, formKey);
    if (twin) return { status: 'enrolled', enrollment: twin, created: false };
    throw error;
  }
  for (const fn of afterCommit) fn();
  if (vaultedCard && !(outcome.status === 'enrolled' && outcome.enrollment.card_id === vaultedCard.id)) await deleteCard(ctx, vaultedCard.id);
  return outcome;
}

/** The link's enrollment of this account (the wallet OTP step), or undefined. */
export function enrollmentOfAccount(deps: AppDeps, link: ConnectLinkRow, accountId: string): Promise<EnrollmentRow | undefined> {
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(accountId)) return Promise.resolve(undefined);
  return deps.database.db
    .selectFrom('connect_link_enrollments')
    .selectAll()
    .$call(inTenant(tenantOf(link)))
    .where('connect_link_id', '=', link.id)
    .where('account_id', '=', accountId)
    .executeTakeFirst();
}

/** The link's latest enrollment (a used link opened again), or undefined. */
export function latestEnrollment(deps: AppDeps, link: ConnectLinkRow): Promise<EnrollmentRow | undefined> {
  return deps.database.db
    .selectFrom('connect_link_enrollments')
    .selectAll()
    .$call(inTenant(tenantOf(link)))
    .where('connect_link_id', '=', link.id)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .executeTakeFirst();
}

/** The enrolled resource as the API shows it (null: deleted since). */
export async function enrolledResource(
  deps: AppDeps,
  link: ConnectLinkRow,
  enrollment: EnrollmentRow,
): Promise<{ account: AccountResponse | null; card: CardResponse | null }> {
  const ctx = linkContext(deps, link);
  const gone = (error: unknown) => {
    if (error instanceof ApiError && error.status === 404) return null;
    throw error;
  };
  return {
    account: enrollment.account_id ? await getAccount(ctx, enrollment.account_id).catch(gone) : null,
    card: enrollment.card_id ? await getCard(ctx, enrollment.card_id).catch(gone) : null,
  };
}

/** Codes a payer may try on a link's wallet step; then it locks for that link and account. */
export const WALLET_CODE_ATTEMPTS = 5;

export type CodeOutcome = { status: 'confirmed'; account: AccountResponse } | { status: 'wrong'; remaining: number } | { status: 'locked' };

/** Whether the link's wallet step has used up its codes. */
export const codeStepLocked = (enrollment: EnrollmentRow): boolean => enrollment.code_attempts >= WALLET_CODE_ATTEMPTS;

/**
 * The wallet account's code from the public page (POST /accounts/{id}/validate under the link's
 * company). The page is open to whoever holds the link, so it counts its own attempts: one is taken
 * before the bank is asked (a conditional increment, so concurrent tries cannot pass the limit), and
 * given back when the answer was not about the code (the rail unavailable, the account no longer
 * waiting).
 */
export async function confirmEnrolledAccount(deps: AppDeps, link: ConnectLinkRow, enrollment: EnrollmentRow, otp: string): Promise<CodeOutcome> {
  const db = deps.database.db;
  const mine = (q: ReturnType<typeof counter>) => q.$call(inTenant(tenantOf(link))).where('id', '=', enrollment.id);
  const counter = () => db.updateTable('connect_link_enrollments');
  const taken = await mine(counter())
    .set((eb) => ({ code_attempts: eb('code_attempts', '+', 1) }))
    .where('code_attempts', '<', WALLET_CODE_ATTEMPTS)
    .returning('code_attempts')
    .executeTakeFirst();
  if (!taken) return { status: 'locked' };
  try {
    return { status: 'confirmed', account: await validateAccount(linkContext(deps, link), enrollment.account_id!, otp) };
  } catch (error) {
    if (error instanceof ApiError && error.def.codeName === 'validation_error' && error.errors?.otp) {
      return taken.code_attempts >= WALLET_CODE_ATTEMPTS
        ? { status: 'locked' }
        : { status: 'wrong', remaining: WALLET_CODE_ATTEMPTS - taken.code_attempts };
    }
    await mine(counter())
      .set((eb) => ({ code_attempts: eb('code_attempts', '-', 1) }))
      .execute();
    throw error;
  }
}

/**
 * Where the payer goes after enrolling: the link's `redirect_url` with `connect_link_id` and
 * `account_id` or `card_id` added to its query (docs/pages.md), or null without one.
 */
export function completionRedirect(link: ConnectLinkRow, enrollment: EnrollmentRow): string | null {
  if (!link.redirect_url) return null;
  let target: URL;
  try {
    target = new URL(link.redirect_url);
  } catch {
    return null;
  }
  target.searchParams.set('connect_link_id', link.id);
  if (enrollment.account_id) target.searchParams.set('account_id', enrollment.account_id);
  if (enrollment.card_id) target.searchParams.set('card_id', enrollment.card_id);
  return target.toString();
}
