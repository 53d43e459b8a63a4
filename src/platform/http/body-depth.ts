/**
 * The deepest nesting of objects and arrays a request body may have (docs/platform.md "Requests
 * and bodies"). Every documented body is a few levels deep; the limit only stops bodies built to
 * exhaust the stack of whatever walks them recursively (JSON.stringify of the idempotency
 * fingerprint, schema validation, serialisers).
 */
export const MAX_BODY_DEPTH = 64;

const QUOTE = 0x22; // "
const BACKSLASH = 0x5c; // \
const OPEN_BRACE = 0x7b; // {
const OPEN_BRACKET = 0x5b; // [
const CLOSE_BRACE = 0x7d; // }
const CLOSE_BRACKET = 0x5d; // ]

/**
 * True when the JSON text nests `{` / `[` more than `max` levels deep. One pass over the text
 * without recursion, before JSON.parse: brackets inside strings (escapes included) do not count.
 * Malformed text is not judged here; JSON.parse refuses it afterwards.
 */
export function jsonTooDeep(text: string, max: number = MAX_BODY_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) {
      inString = true;
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > max) return true;
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      depth--;
    }
  }
  return false;
}
