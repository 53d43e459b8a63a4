import { createHash } from 'node:crypto';
import type { Clock } from '../platform/clock.ts';
import { ISSUER_REJECT_DOCUMENT_SUFFIX } from './sandbox-table.ts';

/**
 * Card issuing (rail `issuer`, docs/issuing.md, docs/rails.md): the processor that issues a card
 * for a customer and is told when it is blocked, unblocked or cancelled. Recaudo keeps the money
 * (the customer's wallet) and answers authorizations itself; the issuer never gives Recaudo a full
 * card number or security code, and Recaudo never asks for one. Every call happens outside a
 * database transaction and is idempotent by `reference` (the card id).
 */
export interface IssueCardRequest {
  reference: string;
  type: 'virtual' | 'physical';
  holderName: string;
  holderDocumentType: string | null;
  holderDocument: string;
  /** Physical cards: where the card is sent. */
  address: { line_1: string; line_2: string | null; city: string; state: string | null; country: string; zip_code: string | null } | null;
}

export type IssueCardOutcome =
  | { status: 'issued'; networkId: string; brand: 'Visa' | 'Mastercard'; last4: string; expMonth: number; expYear: number }
  | { status: 'rejected'; networkId: string; remarks: string }
  /** Not answered yet: ask again later (the card stays `created`). */
  | { status: 'pending'; networkId: string };

export type IssuedCardStatus = 'active' | 'blocked' | 'canceled';

export interface IssuerPort {
  readonly name: string;
  /** Issues the card, or answers where the card of this reference stands (never a second card). */
  issue(request: IssueCardRequest): Promise<IssueCardOutcome>;
  /** Tells the issuer the card's status now (idempotent: the same status again changes nothing). */
  setStatus(request: { reference: string; networkId: string; status: IssuedCardStatus }): Promise<void>;
}

/**
 * The sandbox issuer: issues a Visa at once, its last four digits derived from the card id (never
 * a number that could be used anywhere), valid 4 years from the month of issue. A customer whose
 * document ends in 9999 is refused (KYC_REJECTED). `statuses` keeps what it was told, for tests.
 */
export class SandboxIssuer implements IssuerPort {
  readonly name = 'sandbox';
  readonly statuses = new Map<string, IssuedCardStatus>();
  constructor(private readonly opts: { clock: Clock }) {}

  async issue(request: IssueCardRequest): Promise<IssueCardOutcome> {
    const networkId = `sbx_icard_${request.reference}`;
    if (request.holderDocument.endsWith(ISSUER_REJECT_DOCUMENT_SUFFIX)) return { status: 'rejected', networkId, remarks: 'KYC_REJECTED' };
    const digest = createHash('sha256').update(request.reference).digest();
    const last4 = String(digest.readUInt32BE(0) % 10_000).padStart(4, '0');
    const now = this.opts.clock.now();
    return { status: 'issued', networkId, brand: 'Visa', last4, expMonth: now.getUTCMonth() + 1, expYear: now.getUTCFullYear() + 4 };
  }

  async setStatus(request: { reference: string; networkId: string; status: IssuedCardStatus }): Promise<void> {
    this.statuses.set(request.reference, request.status);
  }
}
