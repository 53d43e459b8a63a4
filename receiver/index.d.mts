export interface RecaudoEvent<T = Record<string, unknown>> {
  id: string;
  event: string;
  created_at: string;
  is_test: boolean;
  data: T;
}
export interface VerifyInput {
  rawBody: Buffer | Uint8Array | string;
  headers: Record<string, string | string[] | undefined> | { get(name: string): string | null };
  /** The webhook's `secret` (from the create response). */
  secret?: string;
  /** The webhook's `header` token. */
  token?: string;
}
export declare function verifyWebhook<T = Record<string, unknown>>(input: VerifyInput): RecaudoEvent<T>;
export declare class WebhookVerificationError extends Error {}
