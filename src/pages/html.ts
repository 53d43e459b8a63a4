import { randomBytes } from 'node:crypto';
import type { FastifyReply } from 'fastify';
import { escapeHtml } from '../rails/messages.ts';

/**
 * A tiny HTML builder: the `html` tag escapes every interpolated value unless it is already
 * `Html` (built by `html` or `raw`). Arrays are joined; null, undefined and false render nothing.
 * Every value that comes from a company or a payer goes through it.
 */
export class Html {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

type Part = Html | string | number | bigint | null | undefined | false | Part[];

function render(part: Part): string {
  if (part === null || part === undefined || part === false) return '';
  if (part instanceof Html) return part.value;
  if (Array.isArray(part)) return part.map(render).join('');
  return escapeHtml(String(part));
}

export function html(strings: TemplateStringsArray, ...values: Part[]): Html {
  let out = strings[0];
  for (let i = 0; i < values.length; i++) out += render(values[i]) + strings[i + 1];
  return new Html(out);
}

/** Trusted markup (an inline SVG built here, CSS). Never a value from a request or a row. */
export function raw(markup: string): Html {
  return new Html(markup);
}

// WCAG AA: every text colour below is at least 4.5:1 on its background (most about 7:1), borders
// of form controls at least 3:1, and focus is a 3 px outline that never depends on colour alone.
const CSS = `
:root{--fg:#1b1f24;--muted:#4b5563;--bg:#eef1f5;--card:#fff;--primary:#0b57d0;--primary-dark:#0842a0;--line:#6b7280;--soft:#d7dce3;--error:#b3261e;--error-bg:#fdecea;--ok:#146c2e;--ok-bg:#e7f4ea;--warn-fg:#5c4400;--warn-bg:#fff4ce}
*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%}
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;color:var(--fg);background:var(--bg)}
a{color:var(--primary)}
a:hover{color:var(--primary-dark)}
:focus-visible{outline:3px solid var(--primary);outline-offset:2px}
.skip{position:absolute;left:-999px;top:0;background:var(--card);padding:.5rem 1rem;z-index:2}
.skip:focus{left:.5rem}
.top{background:var(--card);border-bottom:1px solid var(--soft)}
.top p{max-width:32rem;margin:0 auto;padding:.75rem 1rem;font-weight:600;overflow-wrap:anywhere}
main{max-width:32rem;margin:0 auto;padding:1rem}
.card{background:var(--card);border:1px solid var(--soft);border-radius:12px;padding:1rem;margin:0 0 1rem}
h1{font-size:1.5rem;line-height:1.25;margin:0 0 .5rem;overflow-wrap:anywhere}
h2{font-size:1.15rem;margin:0 0 .75rem}
p{margin:0 0 .75rem}
.lead{font-size:1.1rem}
.desc{color:var(--muted);white-space:pre-line;overflow-wrap:anywhere}
.amount{font-size:2rem;font-weight:700;line-height:1.2;margin:.25rem 0 .5rem;font-variant-numeric:tabular-nums}
.facts{margin:0;padding:0}
.facts div{display:flex;justify-content:space-between;gap:1rem;padding:.35rem 0;border-top:1px solid var(--soft)}
.facts dt{color:var(--muted)}
.facts dd{margin:0;font-weight:600;text-align:right;overflow-wrap:anywhere}
.banner{background:var(--warn-bg);color:var(--warn-fg);border:1px solid #c9a227;border-radius:8px;padding:.6rem .8rem;margin:0 0 1rem;font-size:.95rem}
.banner details{margin-top:.25rem}
.banner summary{cursor:pointer;font-weight:600}
.banner ul{margin:.4rem 0 0;padding-left:1.2rem}
.notice{border-radius:8px;padding:.75rem .9rem;margin:0 0 1rem;border:1px solid}
.notice h2{margin-bottom:.35rem}
.notice p:last-child{margin-bottom:0}
.notice.error{background:var(--error-bg);color:var(--error);border-color:var(--error)}
.notice.error p,.notice.error li{color:var(--fg)}
.notice.ok{background:var(--ok-bg);color:var(--ok);border-color:var(--ok)}
.notice.ok p{color:var(--fg)}
.notice.info{background:var(--card);border-color:var(--line)}
.state{text-align:center;padding:1.5rem 1rem}
.state .facts{text-align:left;margin-bottom:1rem}
.state .icon{display:block;margin:0 auto .75rem;width:56px;height:56px}
.state.ok h1{color:var(--ok)}
.state.error h1{color:var(--error)}
details.method{background:var(--card);border:1px solid var(--soft);border-radius:12px;margin:0 0 .75rem}
details.method>summary{cursor:pointer;padding:.9rem 1rem;font-weight:600;min-height:48px;list-style-position:inside}
details.method[open]>summary{border-bottom:1px solid var(--soft)}
details.method>div{padding:1rem}
label{display:block;font-weight:600;margin:0 0 .25rem}
.hint{display:block;color:var(--muted);font-size:.9rem;font-weight:400;margin:0 0 .35rem}
input,select,textarea{display:block;width:100%;font:inherit;color:var(--fg);background:#fff;border:1px solid var(--line);border-radius:8px;padding:.65rem .75rem;min-height:48px}
input[aria-invalid=true],select[aria-invalid=true]{border:2px solid var(--error)}
.check{display:flex;gap:.6rem;align-items:flex-start;font-weight:400}
.check input{width:1.5rem;height:1.5rem;min-height:0;margin:.1rem 0 0;padding:0;flex:none}
.field{margin:0 0 1rem}
.field-error{color:var(--error);font-size:.9rem;margin:.3rem 0 0;font-weight:600}
.field-error:empty{display:none}
fieldset{border:0;padding:0;margin:0 0 1rem;min-width:0}
legend{font-weight:600;padding:0;margin:0 0 .25rem}
.row{display:flex;gap:.75rem}
.row>div{flex:1;min-width:0}
.row label{font-weight:400}
button,.button{display:inline-flex;align-items:center;justify-content:center;width:100%;min-height:48px;font:inherit;font-weight:700;border-radius:8px;border:2px solid var(--primary);background:var(--primary);color:#fff;padding:.6rem 1rem;cursor:pointer;text-decoration:none;text-align:center}
button:hover,.button:hover{background:var(--primary-dark);border-color:var(--primary-dark);color:#fff}
button.secondary,.button.secondary{background:#fff;color:var(--primary)}
button.secondary:hover,.button.secondary:hover{background:#e8f0fe;color:var(--primary-dark)}
button.danger{background:#fff;color:var(--error);border-color:var(--error)}
button.danger:hover{background:var(--error-bg)}
button[disabled]{opacity:.7;cursor:progress}
.actions{display:grid;gap:.75rem;margin-top:.5rem}
.summary-list{margin:.25rem 0 0;padding-left:1.2rem}
.qr{display:block;width:100%;max-width:260px;height:auto;margin:0 auto 1rem;color:#000;background:#fff}
.payload{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.8rem;min-height:6rem;word-break:break-all}
.results{list-style:none;margin:0;padding:0}
.results li{border-top:1px solid var(--soft);padding:.75rem 0}
.results li:first-child{border-top:0}
.muted{color:var(--muted)}
.small{font-size:.9rem}
.bank{border-top:6px solid #6d28d9}
footer{max-width:32rem;margin:0 auto;padding:0 1rem 2rem;color:var(--muted);font-size:.85rem;text-align:center}
.visually-hidden{position:absolute!important;width:1px;height:1px;padding:0;margin:-1px;overflow:hidden;clip:rect(0,0,0,0);white-space:nowrap;border:0}
@media (min-width:40rem){main{padding:2rem 1rem}.actions.two{grid-template-columns:1fr 1fr}}
@media (prefers-reduced-motion:reduce){*{transition:none!important}}
`;

export interface PageOptions {
  title: string;
  /** Shown in the top bar: the company collecting the money. */
  company?: string | null;
  body: Html;
  /** Inline script (trusted, written here). */
  script?: string;
  /**
   * First-party scripts served by these pages (same origin, with their Subresource Integrity
   * hash), each carrying the page's nonce: the CSP allows no other script, same origin included.
   */
  scripts?: { src: string; integrity: string }[];
  /** Origins the page's scripts may call (its CSP's `connect-src`): a provider's card tokenization. None by default. */
  connectOrigins?: string[];
}

export interface RenderedPage {
  body: string;
  nonce: string;
  /** What the page's CSP must allow beyond its nonce: the origins its scripts call. */
  connectOrigins?: string[];
}

export function page(opts: PageOptions): RenderedPage {
  const nonce = randomBytes(16).toString('base64');
  const doc = html`<!doctype html>
<html lang="es-CO">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex, nofollow">
<meta name="referrer" content="same-origin">
<title>${opts.title}</title>
<style nonce="${nonce}">${raw(CSS)}</style>
</head>
<body>
<a class="skip" href="#contenido">Saltar al contenido</a>
${opts.company ? html`<header class="top"><p>${opts.company}</p></header>` : ''}
<main id="contenido" tabindex="-1">
${opts.body}
</main>
<footer><p>Pagos seguros con Recaudo</p></footer>
${opts.script ? html`<script nonce="${nonce}">${raw(opts.script)}</script>` : ''}
${(opts.scripts ?? []).map((s) => html`<script nonce="${nonce}" src="${s.src}" integrity="${s.integrity}" defer></script>`)}
</body>
</html>`;
  return { body: doc.value, nonce, connectOrigins: opts.connectOrigins ?? [] };
}

/**
 * Sends a page with the headers every payer page carries: never cached (card forms), never framed
 * (clickjacking), a CSP that allows only this page's own style and scripts (by its nonce; when the
 * page says so, the origins its scripts call), and forms that post here
 * (plus the merchant's origin, where a completed payment redirects).
 */
export function sendPage(reply: FastifyReply, status: number, rendered: RenderedPage, opts: { formOrigins?: string[] } = {}): FastifyReply {
  const formAction = ["'self'", ...(opts.formOrigins ?? [])].join(' ');
  const connect = rendered.connectOrigins?.length ? `; connect-src ${rendered.connectOrigins.join(' ')}` : '';
  return reply
    .code(status)
    .header('content-type', 'text/html; charset=utf-8')
    .header('cache-control', 'no-store')
    .header('x-frame-options', 'DENY')
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'same-origin')
    .header(
      'content-security-policy',
      `default-src 'none'; style-src 'nonce-${rendered.nonce}'; script-src 'nonce-${rendered.nonce}'; img-src data:${connect}; form-action ${formAction}; frame-ancestors 'none'; base-uri 'none'`,
    )
    .send(rendered.body);
}

/** Inline SVG icons (decorative: hidden from assistive technology). */
export const icons = {
  ok: raw(
    '<svg class="icon" viewBox="0 0 56 56" aria-hidden="true" focusable="false"><circle cx="28" cy="28" r="26" fill="#146c2e"/><path d="M16 29l8 8 16-17" fill="none" stroke="#fff" stroke-width="5" stroke-linecap="round" stroke-linejoin="round"/></svg>',
  ),
  error: raw(
    '<svg class="icon" viewBox="0 0 56 56" aria-hidden="true" focusable="false"><circle cx="28" cy="28" r="26" fill="#b3261e"/><path d="M19 19l18 18M37 19L19 37" fill="none" stroke="#fff" stroke-width="5" stroke-linecap="round"/></svg>',
  ),
  clock: raw(
    '<svg class="icon" viewBox="0 0 56 56" aria-hidden="true" focusable="false"><circle cx="28" cy="28" r="26" fill="#4b5563"/><path d="M28 14v15l9 6" fill="none" stroke="#fff" stroke-width="5" stroke-linecap="round" stroke-linejoin="round"/></svg>',
  ),
};
