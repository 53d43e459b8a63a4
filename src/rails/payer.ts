/**
 * What payer rails (banklink, walleta, walletb) share: the customer who pays, as a provider needs
 * them, and where an operation stands at a connector whose outcomes arrive asynchronously (a PSE
 * session, a Nequi push), which the reconciler asks when no signed event settled it first.
 */
export interface RailPayer {
  kind: 'natural' | 'company';
  /** CC, CE, PASSPORT or NIT (the customers' document types), or null. */
  documentType: string | null;
  documentNumber: string | null;
  fullName: string;
  email: string | null;
  phone: string | null;
}

/** `pending` with `unknown`: the provider holds no operation under the reference (the create never reached it, so far). */
export type PolledOutcome =
  /** `networkId`: the provider's id of the operation, when it has one (recorded with the outcome). */
  { status: 'approved'; networkId?: string } | { status: 'declined'; remarks: string; networkId?: string } | { status: 'pending'; unknown?: boolean };

/**
 * The provider refused to open the operation (a PSE session, a Nequi push) definitively — bad data,
 * an amount or method it does not take: nothing exists there and asking again gives the same
 * answer, so the charge fails at once with `reason` (never retried until its expiry).
 */
export class RailRefused extends Error {
  constructor(readonly reason: string) {
    super(reason);
    this.name = 'RailRefused';
  }
}

/**
 * How long a provider may keep an operation PENDING before the reconcilers stop asking by
 * themselves: from then on their job fails until it is dead (`recaudo jobs list --dead`,
 * `recaudo_jobs_dead`), for a person to look at. Nothing is ever settled by a guess.
 */
export const PROVIDER_FINAL_WITHIN_MS = 72 * 3_600_000;

/** The error a reconciler throws once a provider has kept an operation open past PROVIDER_FINAL_WITHIN_MS. */
export class ProviderNeverFinal extends Error {
  constructor(what: string, sinceMs: number) {
    super(`${what}: the provider has had no final word for ${Math.round(sinceMs / 3_600_000)} h; a person must look (nothing was guessed)`);
    this.name = 'ProviderNeverFinal';
  }
}
