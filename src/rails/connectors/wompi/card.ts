import type { Clock } from '../../../platform/clock.ts';
import {
  CardRefused,
  RefundRefused,
  type CardData,
  type DebitOutcome,
  type DebitPort,
  type DebitRequest,
  type RefundRequest,
  type SavedCard,
} from '../../debit.ts';
import { WompiRefused, WompiUnavailable, type WompiClient } from './client.ts';
import type { WompiTransaction } from './contract.ts';
import { createOnce, debitOutcomeOf, pollReference } from './outcomes.ts';
import type { PolledOutcome } from '../../payer.ts';

/** A 4xx of the provider on card data is a refusal of the card, definitive; anything else stays unknown. */
async function refusalsOfCard<T>(call: Promise<T>): Promise<T> {
  try {
    return await call;
  } catch (error) {
    if (error instanceof WompiRefused && error.status !== 401 && error.status !== 403) throw new CardRefused(error.message);
    throw error;
  }
}

/** The card saved at the provider: its payment source and the e-mail it belongs to. */
interface CardSource {
  id: number;
  email: string;
}

function parseSource(source: string | null | undefined): CardSource | null {
  if (!source) return null;
  try {
    const parsed = JSON.parse(source) as Partial<CardSource>;
    return typeof parsed.id === 'number' && typeof parsed.email === 'string' ? { id: parsed.id, email: parsed.email } : null;
  } catch {
    return null;
  }
}

/**
 * Card debits through the provider (rail `card`): the card is tokenized and saved as a payment
 * source when it is saved here (POST /cards, /tokens, /cards/tokenized); a charge is a
 * transaction on that source whose reference is the charge id, so a retry or a reconciler never
 * creates a second one. The provider answers PENDING first: the charge stays processing until its
 * signed event or a poll (the reconciler, at `settleAt`) gives the final state.
 */
export class WompiCard implements DebitPort {
  readonly name = 'wompi';
  /** The payer accepts Wompi's contracts (terms, personal data) before any operation that sends their data. */
  readonly consentRequired = true;
  readonly cancelUnavailable =
    'Wompi cannot withdraw a transaction it is still processing: wait for its outcome (a paid charge can then be refunded where Wompi allows it).';

  constructor(
    private readonly client: WompiClient,
    private readonly opts: { clock: Clock; pollAfterMs: number },
  ) {}

  private settleAt(): Date {
    return new Date(this.opts.clock.now().getTime() + this.opts.pollAfterMs);
  }

  async tokenizeCard(card: CardData): Promise<{ token: string }> {
    return { token: (await refusalsOfCard(this.client.tokenizeCard(card))).id };
  }

  browserTokenization(): { url: string; publicKey: string } {
    return this.client.browserTokenization();
  }

  async contracts(): Promise<{ permalink: string; personalDataPermalink: string }> {
    const a = await this.client.acceptance();
    return { permalink: a.permalink, personalDataPermalink: a.personalDataPermalink };
  }

  async saveCard(input: { token: string; customerEmail: string; acceptedAt: Date }): Promise<SavedCard> {
    // A fresh pair of single-use contract tokens for this payment source.
    const acceptance = await this.client.acceptance();
    const source = await refusalsOfCard(this.client.createPaymentSource({ token: input.token, customerEmail: input.customerEmail, acceptance }));
    return {
      source: JSON.stringify({ id: source.id, email: input.customerEmail } satisfies CardSource),
      acceptance: { permalink: acceptance.permalink, personalDataPermalink: acceptance.personalDataPermalink, acceptedAt: input.acceptedAt },
    };
  }

  async debit(request: DebitRequest): Promise<DebitOutcome> {
    const source = parseSource(request.card?.source);
    const token = request.card?.token;
    if (request.method !== 'card' || (!source && !(token && request.payerEmail))) {
      return { status: 'declined', networkId: '', remarks: 'CARD_NOT_SAVED_AT_PROVIDER' };
    }
    let tx: WompiTransaction;
    try {
      tx = await createOnce(
        this.client,
        source
          ? {
              reference: request.reference,
              amount: request.amount,
              currency: request.currency,
              customerEmail: source.email,
              paymentSourceId: source.id,
              // Merchant-initiated on a saved card: issuers decline those without the flag.
              recurrent: true,
              paymentMethod: { installments: request.installments ?? 1 },
            }
          : {
              // A card paid once (a payment page): its token, with the terms the payer accepted on the page.
              reference: request.reference,
              amount: request.amount,
              currency: request.currency,
              customerEmail: request.payerEmail!,
              acceptance: await this.client.acceptance(),
              paymentMethod: { type: 'CARD', token, installments: request.installments ?? 1 },
            },
      );
    } catch (error) {
      // Refused before any money moved (bad data, keys, amount): a final decline with the reason.
      if (error instanceof WompiRefused) return { status: 'declined', networkId: '', remarks: `${error.type}: ${error.message}`.slice(0, 250) };
      throw error;
    }
    return debitOutcomeOf(tx, this.settleAt());
  }

  poll(reference: string): Promise<PolledOutcome> {
    return pollReference(this.client, reference);
  }

  async status(request: DebitRequest): Promise<DebitOutcome> {
    const tx = await this.client.findByReference(request.reference);
    // Not there: the submission never reached the provider; the reconciler submits it again.
    if (!tx) return this.debit(request);
    return debitOutcomeOf(tx, this.settleAt());
  }

  /** A cancelled charge: an approved transaction is voided; a pending one cannot be (ASSUMPTION) and is left to settle. */
  async void(reference: string): Promise<void> {
    const tx = await this.client.findByReference(reference);
    if (tx?.status === 'APPROVED') await this.client.voidTransaction(tx.id);
  }

  /**
   * A refund is the void of the whole card transaction (ASSUMPTION: the public API offers voids of
   * approved card transactions and no partial refunds; refunds are whole here anyway). A void the
   * provider refuses (a 4xx), or a transaction that is not approved, is RefundRefused: the refund
   * ends failed and the money goes back to the balance. An answer without the transaction (an empty
   * 201) is read back; anything still unclear is unknown and asked again by the reconciler.
   */
  async refund(request: RefundRequest): Promise<{ status: 'succeeded'; networkId: string }> {
    const tx = await this.client.findByReference(request.chargeReference);
    if (!tx) throw new WompiUnavailable(`wompi: no transaction for ${request.chargeReference}`);
    if (tx.status === 'VOIDED') return { status: 'succeeded', networkId: tx.id };
    if (tx.status !== 'APPROVED') throw new RefundRefused(`${tx.status}: the provider's transaction is not approved and cannot be voided`);
    let voided: WompiTransaction | null;
    try {
      voided = await this.client.voidTransaction(tx.id);
    } catch (error) {
      if (error instanceof WompiRefused && error.status !== 401 && error.status !== 403) {
        // A refusal may answer a void already done (a retry after a lost answer): the transaction decides.
        const after = await this.client.getTransaction(tx.id);
        if (after.status === 'VOIDED') return { status: 'succeeded', networkId: after.id ?? tx.id };
        if (after.status === 'APPROVED') throw new RefundRefused(`VOID_REFUSED: ${error.message}`.slice(0, 250));
        throw new WompiUnavailable(`wompi: void of ${tx.id} refused while it is ${after.status}`);
      }
      throw error;
    }
    const now = voided?.status ? voided : await this.client.getTransaction(tx.id);
    if (now.status === 'VOIDED') return { status: 'succeeded', networkId: now.id ?? tx.id };
    throw new WompiUnavailable(`wompi: void of ${tx.id} is ${now.status}`);
  }
}
