/**
 * A small XML parser and inclusive Canonical XML 1.0 (without comments), written for the DIAN
 * signature (reference/dian.md "Signing in Node"): the signer splices the signature into the
 * untouched document text and canonicalizes subtrees of the parsed text; the verifier
 * canonicalizes the same way. One tree serves both the signature check and the values read from
 * the document, so what was verified is what is read.
 *
 * Scope: what UBL documents use. DOCTYPE / entity declarations are refused (no entity expansion);
 * the five predefined entities and character references are decoded; CDATA becomes text; comments
 * are dropped from canonical output; processing instructions are kept.
 */

export interface XmlText {
  type: 'text';
  value: string; // decoded
}
export interface XmlOther {
  type: 'comment' | 'pi';
  value: string; // comment text, or `target data` for a processing instruction
}
export interface XmlAttr {
  name: string; // qualified name as written
  prefix: string; // '' when none
  local: string;
  value: string; // decoded, normalized
}
export interface XmlElement {
  type: 'element';
  name: string;
  prefix: string;
  local: string;
  /** Namespace URI of the element ('' when none). */
  ns: string;
  /** Attributes that are not namespace declarations. */
  attrs: XmlAttr[];
  /** Namespace declarations made on this element: prefix ('' for default) → URI. */
  nsDecls: Map<string, string>;
  children: XmlNode[];
  parent: XmlElement | null;
  /** Offsets in the parsed text: start of `<`, end of the start tag (after `>`), end of the element. */
  start: number;
  startTagEnd: number;
  end: number;
}
export type XmlNode = XmlElement | XmlText | XmlOther;

export interface XmlDocument {
  root: XmlElement;
  /** Comments and processing instructions before and after the root element. */
  before: XmlOther[];
  after: XmlOther[];
}

export class XmlError extends Error {}

const XML_NS = 'http://www.w3.org/XML/1998/namespace';
/** Shared by every element without attributes (never mutated after parsing). */
const NO_DECLS: Map<string, string> = new Map();
const NAME = /[A-Za-z_:\u00C0-\uFFFF][A-Za-z0-9_:.\-\u00B7\u00C0-\uFFFF]*/y;
function nameAt(text: string, pos: number): string | null {
  NAME.lastIndex = pos;
  const m = NAME.exec(text);
  return m ? m[0] : null;
}

function decodeEntities(raw: string, at: number): string {
  if (raw.indexOf('&') < 0) return raw;
  return raw.replace(/&([^;&]*);?/g, (m, ref: string) => {
    if (!m.endsWith(';')) throw new XmlError(`bad entity reference near offset ${at}`);
    switch (ref) {
      case 'lt':
        return '<';
      case 'gt':
        return '>';
      case 'amp':
        return '&';
      case 'quot':
        return '"';
      case 'apos':
        return "'";
    }
    let code: number;
    if (/^#x[0-9a-fA-F]+$/.test(ref)) code = parseInt(ref.slice(2), 16);
    else if (/^#[0-9]+$/.test(ref)) code = parseInt(ref.slice(1), 10);
    else throw new XmlError(`unknown entity &${ref}; near offset ${at}`);
    if (code > 0x10ffff || code === 0) throw new XmlError(`bad character reference near offset ${at}`);
    return String.fromCodePoint(code);
  });
}

function split(qname: string): [string, string] {
  const i = qname.indexOf(':');
  return i < 0 ? ['', qname] : [qname.slice(0, i), qname.slice(i + 1)];
}

/** XML line-end normalization (`\r\n` and lone `\r` → `\n`), for documents from elsewhere. */
export function normalizeLineEnds(s: string): string {
  return s.includes('\r') ? s.replace(/\r\n?/g, '\n') : s;
}

/**
 * Parses XML text. Line ends must already be `\n` (what we produce; a carriage return in content is
 * written `&#xD;`): a raw `\r` is refused so offsets always match the text (see normalizeLineEnds).
 * `inherited` gives namespaces in scope around a fragment.
 */
export function parseXml(input: string, inherited?: Map<string, string>): XmlDocument {
  const text = input;
  if (text.includes('\r')) throw new XmlError('raw carriage return (normalize line ends first)');
  let pos = 0;
  const before: XmlOther[] = [];
  const after: XmlOther[] = [];
  let root: XmlElement | null = null;
  const stack: XmlElement[] = [];
  const rootScope = new Map<string, string>(inherited ?? []);
  rootScope.set('xml', XML_NS);
  const scopes: Map<string, string>[] = [rootScope];
  const len = text.length;
  if (text.charCodeAt(0) === 0xfeff) pos = 1;

  const addNode = (node: XmlNode) => {
    const top = stack[stack.length - 1];
    if (top) top.children.push(node);
    else if (node.type === 'element') {
      if (root) throw new XmlError('more than one root element');
      root = node;
    } else if (node.type === 'text') {
      if (node.value.trim() !== '') throw new XmlError('text outside the root element');
    } else (root ? after : before).push(node);
  };

  while (pos < len) {
    const lt = text.indexOf('<', pos);
    if (lt < 0 || lt > pos) {
      const end = lt < 0 ? len : lt;
      const raw = text.slice(pos, end);
      if (raw.includes(']]>')) throw new XmlError(`']]>' in text near offset ${pos}`);
      addNode({ type: 'text', value: decodeEntities(raw, pos) });
      pos = end;
      continue;
    }
    if (text.startsWith('<?', pos)) {
      const close = text.indexOf('?>', pos + 2);
      if (close < 0) throw new XmlError('unterminated processing instruction');
      const body = text.slice(pos + 2, close);
      pos = close + 2;
      if (/^xml(\s|$)/.test(body)) {
        if (root || stack.length || before.length || lt > (text.charCodeAt(0) === 0xfeff ? 1 : 0)) throw new XmlError('misplaced XML declaration');
        continue;
      }
      // Target, then the data without its leading whitespace (as C14N writes a PI).
      const pi = /^([^\s]+)(?:\s+([\s\S]*))?$/.exec(body);
      if (!pi) throw new XmlError(`bad processing instruction near offset ${lt}`);
      addNode({ type: 'pi', value: pi[2] ? `${pi[1]} ${pi[2]}` : pi[1] });
      continue;
    }
    if (text.startsWith('<!--', pos)) {
      const close = text.indexOf('-->', pos + 4);
      if (close < 0) throw new XmlError('unterminated comment');
      addNode({ type: 'comment', value: text.slice(pos + 4, close) });
      pos = close + 3;
      continue;
    }
    if (text.startsWith('<![CDATA[', pos)) {
      if (!stack.length) throw new XmlError('CDATA outside the root element');
      const close = text.indexOf(']]>', pos + 9);
      if (close < 0) throw new XmlError('unterminated CDATA section');
      const value = text.slice(pos + 9, close);
      addNode({ type: 'text', value });
      pos = close + 3;
      continue;
    }
    if (text.startsWith('<!', pos)) throw new XmlError('DOCTYPE and declarations are not accepted');
    if (text.startsWith('</', pos)) {
      const close = text.indexOf('>', pos);
      if (close < 0) throw new XmlError('unterminated end tag');
      const name = text.slice(pos + 2, close).trim();
      const top = stack.pop();
      if (!top || top.name !== name) throw new XmlError(`mismatched end tag </${name}> near offset ${pos}`);
      scopes.pop();
      top.end = close + 1;
      pos = close + 1;
      continue;
    }
    // Start tag.
    const start = pos;
    pos++;
    const name = nameAt(text, pos);
    if (!name) throw new XmlError(`bad element name near offset ${pos}`);
    pos += name.length;
    const rawAttrs: Array<[string, string]> = [];
    let selfClosing = false;
    for (;;) {
      const ws = pos;
      while (pos < len && (text[pos] === ' ' || text[pos] === '\n' || text[pos] === '\t' || text[pos] === '\r')) pos++;
      if (text[pos] === '>') {
        pos++;
        break;
      }
      if (text[pos] === '/' && text[pos + 1] === '>') {
        pos += 2;
        selfClosing = true;
        break;
      }
      if (pos === ws) throw new XmlError(`malformed start tag <${name}> near offset ${pos}`);
      const an = nameAt(text, pos);
      if (!an) throw new XmlError(`bad attribute name near offset ${pos}`);
      pos += an.length;
      while (text[pos] === ' ' || text[pos] === '\n' || text[pos] === '\t') pos++;
      if (text[pos] !== '=') throw new XmlError(`attribute without value near offset ${pos}`);
      pos++;
      while (text[pos] === ' ' || text[pos] === '\n' || text[pos] === '\t') pos++;
      const q = text[pos];
      if (q !== '"' && q !== "'") throw new XmlError(`unquoted attribute near offset ${pos}`);
      const close = text.indexOf(q, pos + 1);
      if (close < 0) throw new XmlError('unterminated attribute value');
      const raw = text.slice(pos + 1, close);
      if (raw.includes('<')) throw new XmlError(`'<' in attribute value near offset ${pos}`);
      // Attribute-value normalization: literal whitespace characters become spaces; references survive.
      rawAttrs.push([an, decodeEntities(raw.replace(/[\t\n\r]/g, ' '), pos)]);
      pos = close + 1;
    }
    const parentScope = scopes[scopes.length - 1];
    let scope = parentScope;
    const nsDecls = rawAttrs.length ? new Map<string, string>() : NO_DECLS;
    const attrs: XmlAttr[] = [];
    for (let i = 0; i < rawAttrs.length; i++) {
      const [qn, value] = rawAttrs[i];
      for (let j = 0; j < i; j++) if (rawAttrs[j][0] === qn) throw new XmlError(`duplicate attribute ${qn}`);
      if (qn === 'xmlns') nsDecls.set('', value);
      else if (qn.startsWith('xmlns:')) nsDecls.set(qn.slice(6), value);
      else {
        const [prefix, local] = split(qn);
        attrs.push({ name: qn, prefix, local, value });
      }
    }
    if (nsDecls.size) {
      scope = new Map(parentScope);
      for (const [p, u] of nsDecls) scope.set(p, u);
    }
    const [prefix, local] = split(name);
    const ns = scope.get(prefix) ?? '';
    if (prefix && !scope.has(prefix)) throw new XmlError(`undeclared namespace prefix ${prefix}`);
    for (const a of attrs) if (a.prefix && !scope.has(a.prefix)) throw new XmlError(`undeclared namespace prefix ${a.prefix}`);
    const el: XmlElement = {
      type: 'element',
      name,
      prefix,
      local,
      ns,
      attrs,
      nsDecls,
      children: [],
      parent: stack[stack.length - 1] ?? null,
      start,
      startTagEnd: pos,
      end: pos,
    };
    addNode(el);
    if (!selfClosing) {
      stack.push(el);
      scopes.push(scope);
    }
  }
  if (stack.length) throw new XmlError(`unclosed element <${stack[stack.length - 1].name}>`);
  if (!root) throw new XmlError('no root element');
  return { root, before, after };
}

/** Namespaces in scope on an element (declarations of the element and its ancestors; nearest wins). */
export function inScopeNamespaces(el: XmlElement, inherited?: Map<string, string>): Map<string, string> {
  const chain: XmlElement[] = [];
  for (let e: XmlElement | null = el; e; e = e.parent) chain.push(e);
  const out = new Map<string, string>(inherited ?? []);
  for (let i = chain.length - 1; i >= 0; i--) for (const [p, u] of chain[i].nsDecls) out.set(p, u);
  return out;
}

/** Namespace URI of an attribute, for canonical ordering. */
function attrNs(a: XmlAttr, scope: Map<string, string>): string {
  if (!a.prefix) return '';
  if (a.prefix === 'xml') return XML_NS;
  return scope.get(a.prefix) ?? '';
}

export function escapeC14nText(s: string): string {
  if (!/[&<>\r]/.test(s)) return s;
  return s.replace(/[&<>\r]/g, (c) => (c === '&' ? '&amp;' : c === '<' ? '&lt;' : c === '>' ? '&gt;' : '&#xD;'));
}

export function escapeC14nAttr(s: string): string {
  if (!/[&<"\t\n\r]/.test(s)) return s;
  return s.replace(/[&<"\t\n\r]/g, (c) =>
    c === '&' ? '&amp;' : c === '<' ? '&lt;' : c === '"' ? '&quot;' : c === '\t' ? '&#x9;' : c === '\n' ? '&#xA;' : '&#xD;',
  );
}

/**
 * Inclusive C14N 1.0 of the subtree rooted at `el` (or of the whole document when `el` is the
 * root): the apex carries every namespace in scope and the xml:* attributes of its ancestors;
 * `exclude` (the enveloped signature) is left out with its subtree.
 */
export function canonicalize(el: XmlElement, opts: { exclude?: XmlElement | null; inherited?: Map<string, string> } = {}): string {
  const out: string[] = [];
  const exclude = opts.exclude ?? null;
  // Ancestors' xml:* attributes are inherited by the apex (C14N 1.0 §2.4) unless it has its own.
  const inheritedXmlAttrs: XmlAttr[] = [];
  for (let p = el.parent; p; p = p.parent) {
    for (const a of p.attrs) {
      if (a.prefix === 'xml' && !el.attrs.some((b) => b.name === a.name) && !inheritedXmlAttrs.some((b) => b.name === a.name))
        inheritedXmlAttrs.push(a);
    }
  }
  const apexScope = inScopeNamespaces(el, opts.inherited);
  const walk = (e: XmlElement, scope: Map<string, string>, rendered: Map<string, string>, extraAttrs: XmlAttr[], apex: boolean) => {
    // Namespace axis: render declarations whose value differs from what the output parent rendered.
    // Below the apex only the element's own declarations can differ from its parent's.
    let decls: Array<[string, string]> | null = null;
    let nextRendered = rendered;
    if (apex || e.nsDecls.size) {
      const candidates = apex ? scope : e.nsDecls;
      for (const [p, u] of candidates) {
        if (p === 'xml') continue;
        const prev = rendered.get(p);
        if (p === '' && u === '' && (prev === undefined || prev === '')) continue;
        if (prev === u) continue;
        if (!decls) {
          decls = [];
          nextRendered = new Map(rendered);
        }
        decls.push([p, u]);
        nextRendered.set(p, u);
      }
      if (decls && decls.length > 1) decls.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    }
    let attrs = e.attrs;
    if (extraAttrs.length) attrs = [...e.attrs, ...extraAttrs];
    if (attrs.length > 1) {
      attrs = attrs.slice().sort((a, b) => {
        const na = attrNs(a, scope),
          nb = attrNs(b, scope);
        if (na !== nb) return na < nb ? -1 : 1;
        return a.local < b.local ? -1 : a.local > b.local ? 1 : 0;
      });
    }
    let tag = '<' + e.name;
    if (decls) for (const [p, u] of decls) tag += (p ? ` xmlns:${p}="` : ' xmlns="') + escapeC14nAttr(u) + '"';
    for (const a of attrs) tag += ' ' + a.name + '="' + escapeC14nAttr(a.value) + '"';
    out.push(tag + '>');
    for (const c of e.children) {
      if (c.type === 'text') out.push(escapeC14nText(c.value));
      else if (c.type === 'element') {
        if (c === exclude) continue;
        let childScope = scope;
        if (c.nsDecls.size) {
          childScope = new Map(scope);
          for (const [p, u] of c.nsDecls) childScope.set(p, u);
        }
        walk(c, childScope, nextRendered, [], false);
      } else if (c.type === 'pi') out.push('<?' + c.value + '?>');
    }
    out.push('</' + e.name + '>');
  };
  walk(el, apexScope, new Map(), inheritedXmlAttrs, true);
  return out.join('');
}

/** Canonical form of a whole document (processing instructions outside the root included, comments dropped). */
export function canonicalizeDocument(doc: XmlDocument, exclude?: XmlElement | null): string {
  let s = '';
  for (const n of doc.before) if (n.type === 'pi') s += `<?${n.value}?>\n`;
  s += canonicalize(doc.root, { exclude });
  for (const n of doc.after) if (n.type === 'pi') s += `\n<?${n.value}?>`;
  return s;
}

// ---- small tree helpers shared by the signer, the verifier and the tests ----

export function children(el: XmlElement, ns?: string, local?: string): XmlElement[] {
  const out: XmlElement[] = [];
  for (const c of el.children)
    if (c.type === 'element' && (ns === undefined || c.ns === ns) && (local === undefined || c.local === local)) out.push(c);
  return out;
}

export function child(el: XmlElement | null | undefined, ns: string, local: string): XmlElement | null {
  if (!el) return null;
  for (const c of el.children) if (c.type === 'element' && c.ns === ns && c.local === local) return c;
  return null;
}

/** Follows a path of [ns, local] steps through first matches. */
export function path(el: XmlElement | null | undefined, ...steps: Array<[string, string]>): XmlElement | null {
  let cur: XmlElement | null = el ?? null;
  for (const [ns, local] of steps) cur = child(cur, ns, local);
  return cur;
}

export function textOf(el: XmlElement | null | undefined): string | null {
  if (!el) return null;
  let s = '';
  for (const c of el.children) if (c.type === 'text') s += c.value;
  return s;
}

export function attr(el: XmlElement | null | undefined, name: string): string | null {
  if (!el) return null;
  for (const a of el.attrs) if (a.name === name) return a.value;
  return null;
}

export function descendants(el: XmlElement, ns: string, local: string, out: XmlElement[] = []): XmlElement[] {
  for (const c of el.children) {
    if (c.type !== 'element') continue;
    if (c.ns === ns && c.local === local) out.push(c);
    descendants(c, ns, local, out);
  }
  return out;
}
