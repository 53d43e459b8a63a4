const NIT_WEIGHTS = [3, 7, 13, 17, 19, 23, 29, 37, 41, 43, 47, 53, 59, 67, 71];

/** DIAN's check digit for a NIT (modulo 11 with DIAN's prime weights, from the rightmost digit). */
export function nitCheckDigit(nit: string): number {
  const digits = nit.replace(/\D/g, '');
  let sum = 0;
  for (let i = 0; i < digits.length; i++) sum += Number(digits[digits.length - 1 - i]) * NIT_WEIGHTS[i];
  const r = sum % 11;
  return r >= 2 ? 11 - r : r;
}
