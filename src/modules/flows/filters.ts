/**
 * The flows' filter language (docs/flows.md "Filters"): a list of conditions on dotted paths of
 * the event's `data`, all of which must hold. Data, never code: a condition is `{path, op, value}`
 * with a fixed set of operators, evaluated by plain comparisons. Pure.
 */
export const FILTER_OPS = ['eq', 'ne', 'in', 'nin', 'gt', 'gte', 'lt', 'lte', 'exists'] as const;
export type FilterOp = (typeof FILTER_OPS)[number];
export type Scalar = string | number | boolean | null;

export interface FlowFilter {
  path: string;
  op: FilterOp;
  value?: Scalar | Scalar[];
}

export type FlowAction =
  | { type: 'call_url'; url: string }
  | { type: 'send_message'; template_id: string; to: string | null; to_path: string | null; variables: Record<string, string> };

/** `a.b.c`: 1 to 8 segments of letters, digits and underscores (array indexes are digits). */
export const PATH_RE = /^[A-Za-z0-9_]{1,64}(\.[A-Za-z0-9_]{1,64}){0,7}$/;

/** The value at a dotted path of `data`; undefined when any step is missing. Own properties only. */
export function valueAt(data: unknown, path: string): unknown {
  let current: unknown = data;
  for (const key of path.split('.')) {
    if (current === null || typeof current !== 'object') return undefined;
    if (!Object.prototype.hasOwnProperty.call(current, key)) return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}

/** A number from a number or a decimal string ("1500.50"); null otherwise. */
function numeric(value: unknown): number | null {
  if (typeof value === 'number' && Number.isFinite(value)) return value;
  if (typeof value === 'string' && /^-?\d{1,15}(\.\d{1,6})?$/.test(value)) return Number(value);
  return null;
}

const same = (a: unknown, b: Scalar) => a === b || (a === undefined && b === null);

export function matches(filter: FlowFilter, data: unknown): boolean {
  const found = valueAt(data, filter.path);
  switch (filter.op) {
    case 'exists':
      return (found !== undefined && found !== null) === (filter.value !== false);
    case 'eq':
      return same(found, filter.value as Scalar);
    case 'ne':
      return !same(found, filter.value as Scalar);
    case 'in':
      return (filter.value as Scalar[]).some((v) => same(found, v));
    case 'nin':
      return !(filter.value as Scalar[]).some((v) => same(found, v));
    default: {
      const left = numeric(found);
      const right = numeric(filter.value);
      if (left === null || right === null) return false;
      if (filter.op === 'gt') return left > right;
      if (filter.op === 'gte') return left >= right;
      if (filter.op === 'lt') return left < right;
      return left <= right;
    }
  }
}

export function allMatch(filters: readonly FlowFilter[], data: unknown): boolean {
  return filters.every((f) => matches(f, data));
}

/** Problems of one filter as the API reports them (field → messages); empty when it is fine. */
export function filterProblems(filter: FlowFilter, index: number): Record<string, string[]> {
  const at = `filters.${index}`;
  const errors: Record<string, string[]> = {};
  const isScalar = (v: unknown) => v === null || ['string', 'number', 'boolean'].includes(typeof v);
  if (!PATH_RE.test(filter.path)) errors[`${at}.path`] = ['must be a dotted path of the event data (letters, digits, _; up to 8 parts)'];
  const v = filter.value;
  if (filter.op === 'in' || filter.op === 'nin') {
    if (!Array.isArray(v) || v.length === 0 || v.length > 50 || !v.every(isScalar))
      errors[`${at}.value`] = ['must be a list of 1 to 50 strings, numbers, booleans or null'];
  } else if (['gt', 'gte', 'lt', 'lte'].includes(filter.op)) {
    if (numeric(v) === null) errors[`${at}.value`] = ['must be a number'];
  } else if (filter.op === 'exists') {
    if (v !== undefined && typeof v !== 'boolean') errors[`${at}.value`] = ['must be true or false (default true)'];
  } else if (v === undefined || !isScalar(v)) {
    errors[`${at}.value`] = ['must be a string, number, boolean or null'];
  }
  return errors;
}
