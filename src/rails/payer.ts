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
export type PolledOutcome = { status: 'approved' } | { status: 'declined'; remarks: string } | { status: 'pending'; unknown?: boolean };
