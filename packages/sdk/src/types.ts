// Types read from the generated `paths` (src/schema.d.ts): the body an operation takes, the JSON it
// answers on success, its path and query parameters. Nothing here is written by hand per endpoint.
import type { paths } from './schema.js';

export type { paths };

export type HttpMethod = 'get' | 'post' | 'put' | 'delete';

/** Paths that have an operation for `M`. */
export type PathsWith<M extends HttpMethod> = {
  [P in keyof paths]: NonNullable<paths[P][M]> extends never ? never : P;
}[keyof paths];

/** The operation object of `M` on `P`. */
export type Operation<P extends keyof paths, M extends HttpMethod> = NonNullable<paths[P][M]>;

type JsonContent<T> = T extends { content: { 'application/json': infer C } } ? C : undefined;

/** The JSON request body of an operation (`undefined` when it takes none). */
export type RequestBody<P extends keyof paths, M extends HttpMethod> =
  Operation<P, M> extends { requestBody?: infer B } ? (undefined extends B ? JsonContent<NonNullable<B>> | undefined : JsonContent<B>) : undefined;

type SuccessStatus = 200 | 201 | 202 | 204;

/** The JSON an operation answers on success (the first 2xx the document declares). */
export type ResponseBody<P extends keyof paths, M extends HttpMethod> =
  Operation<P, M> extends { responses: infer R } ? { [S in keyof R]: S extends SuccessStatus ? JsonContent<R[S]> : never }[keyof R] : never;

type Params<P extends keyof paths, M extends HttpMethod> = Operation<P, M> extends { parameters: infer X } ? X : never;

/** Path parameters (`{ id: string }`), or never when the path has none. */
export type PathParams<P extends keyof paths, M extends HttpMethod> = Params<P, M> extends { path: infer X } ? X : never;

/** Query parameters of the operation (filters, `page`, `per_page`, `sort`). */
export type QueryParams<P extends keyof paths, M extends HttpMethod> = Params<P, M> extends { query?: infer X } ? NonNullable<X> : never;

type IdempotencyHeader = 'x-idempotency' | 'Idempotency-Key' | 'idempotency-key';
type OptionalKeys<T> = { [K in keyof T]-?: object extends Pick<T, K> ? K : never }[keyof T];
/** The header parameters with the idempotency ones optional: the client fills them in. */
type ClientHeader<H> = Omit<H, IdempotencyHeader> & { [K in Extract<keyof H, IdempotencyHeader>]?: H[K] };
type ClientParameters<X> = X extends { header: infer H }
  ? Exclude<keyof ClientHeader<H>, OptionalKeys<ClientHeader<H>>> extends never
    ? Omit<X, 'header'> & { header?: ClientHeader<H> }
    : Omit<X, 'header'> & { header: ClientHeader<H> }
  : X;
type ClientOperation<O> = O extends { parameters: infer X } ? Omit<O, 'parameters'> & { parameters: ClientParameters<X> } : O;

/**
 * `paths` as the client takes it: the document declares `x-idempotency` required on the POSTs that
 * need it, and the client sends one itself (or the caller's `idempotencyKey`), so it is optional here.
 */
export type ClientPaths = {
  [P in keyof paths]: { [M in keyof paths[P]]: M extends HttpMethod ? ClientOperation<paths[P][M]> : paths[P][M] };
};
