import { createHash, generateKeyPairSync, randomBytes, randomUUID, verify, X509Certificate } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { XMLParser } from 'fast-xml-parser';
import forge from 'node-forge';
import { unzipTexts } from '../../src/documents/dian/zip.ts';

/**
 * TEST SUPPORT ONLY (imported by tests, never by the application): a local HTTP server speaking
 * DIAN's SOAP 1.2 web service. It CHECKS the WS-Security header the way the real service does —
 * timestamp not expired, `wsa:To` equal to its URL, the digest of the `wsa:To` element under its
 * own exclusive-C14N implementation (written independently of the client's, over a parsed tree),
 * the RSA-SHA256 signature of the canonical SignedInfo with the BinarySecurityToken's key — and
 * refuses anything else with a WCF-like `InvalidSecurity` fault. Answers are DIAN-shaped
 * (DataContract serialization, `b:`/`c:` prefixes) and scriptable per document.
 */

export const WSU = 'http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-utility-1.0.xsd';
const WSA = 'http://www.w3.org/2005/08/addressing';
const DS = 'http://www.w3.org/2000/09/xmldsig#';
const EXC_C14N = 'http://www.w3.org/2001/10/xml-exc-c14n#';
const RSA_SHA256 = 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256';
const SHA256 = 'http://www.w3.org/2001/04/xmlenc#sha256';
const ACTION_BASE = 'http://wcf.dian.colombia/IWcfDianCustomerServices/';

export type FakeVerdict = { status: 'accepted'; notifications?: string[] } | { status: 'rejected'; messages: string[]; description?: string };

export interface FakeDocumentScript {
  verdict: FakeVerdict;
  /** Status queries (or the sync send itself) answered `98 in process` before the verdict. */
  inProcessPolls?: number;
  /** `hang`: record the document, never answer the send; `hang-lost`: never answer, never record (GetStatus → 66). */
  submit?: 'answer' | 'hang' | 'hang-lost';
}

export interface FakeRange {
  resolutionNumber: string;
  resolutionDate: string;
  prefix: string;
  fromNumber: string;
  toNumber: string;
  validDateFrom: string;
  validDateTo: string;
  technicalKey: string;
}

export interface FakeCall {
  operation: string;
  params: Record<string, string>;
  /** The document keys contained in a sent zip. */
  documentKeys: string[];
}

interface DocState {
  verdict: FakeVerdict;
  inProcessLeft: number;
}

// ---------------------------------------------------------------------------------------------
// A minimal exclusive C14N (http://www.w3.org/2001/10/xml-exc-c14n#, without comments, no
// InclusiveNamespaces) over fast-xml-parser's order-preserving tree.

type PNode = Record<string, unknown>;
const ATTRS = ':@';

const orderedParser = new XMLParser({
  preserveOrder: true,
  ignoreAttributes: false,
  attributeNamePrefix: '',
  parseTagValue: false,
  parseAttributeValue: false,
  trimValues: false,
  processEntities: false,
  htmlEntities: false,
});

function decodeEntities(s: string): string {
  return s.replace(/&(#x[0-9a-fA-F]+|#\d+|amp|lt|gt|quot|apos);/g, (_, e: string) => {
    if (e[0] === '#') return String.fromCodePoint(e[1] === 'x' ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10));
    return { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" }[e] as string;
  });
}

function tagOf(node: PNode): string | null {
  for (const k of Object.keys(node)) if (k !== ATTRS && k !== '#text') return k;
  return null;
}
function attrsOf(node: PNode): Record<string, string> {
  const raw = (node[ATTRS] ?? {}) as Record<string, string>;
  return Object.fromEntries(Object.entries(raw).map(([k, v]) => [k, decodeEntities(String(v))]));
}
function kids(node: PNode): PNode[] {
  const tag = tagOf(node);
  return tag ? ((node[tag] as PNode[]) ?? []) : [];
}
function prefixOf(qname: string): string {
  const i = qname.indexOf(':');
  return i < 0 ? '' : qname.slice(0, i);
}
function localOf(qname: string): string {
  const i = qname.indexOf(':');
  return i < 0 ? qname : qname.slice(i + 1);
}
function scopeWith(node: PNode, inScope: Map<string, string>): Map<string, string> {
  const next = new Map(inScope);
  for (const [k, v] of Object.entries(attrsOf(node))) {
    if (k === 'xmlns') next.set('', v);
    else if (k.startsWith('xmlns:')) next.set(k.slice(6), v);
  }
  return next;
}
const escText = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/\r/g, '&#xD;');
const escAttr = (s: string) =>
  s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/"/g, '&quot;').replace(/\t/g, '&#x9;').replace(/\n/g, '&#xA;').replace(/\r/g, '&#xD;');

export function excC14n(node: PNode, inheritedScope: Map<string, string>, rendered: Map<string, string> = new Map()): string {
  const tag = tagOf(node);
  if (!tag) return escText(decodeEntities(String(node['#text'] ?? '')));
  const scope = scopeWith(node, inheritedScope);
  const attrs = Object.entries(attrsOf(node)).filter(([k]) => k !== 'xmlns' && !k.startsWith('xmlns:'));
  const used = new Set<string>([prefixOf(tag)]);
  for (const [k] of attrs) if (prefixOf(k) && prefixOf(k) !== 'xml') used.add(prefixOf(k));
  const nextRendered = new Map(rendered);
  const decls: Array<[string, string]> = [];
  for (const p of [...used].sort()) {
    const uri = scope.get(p) ?? '';
    if (p === '' && uri === '' && (rendered.get('') ?? '') === '') continue;
    if (rendered.get(p) !== uri) {
      decls.push([p, uri]);
      nextRendered.set(p, uri);
    }
  }
  const sortedAttrs = attrs
    .map(([k, v]) => ({
      k,
      v,
      uri: prefixOf(k) ? (prefixOf(k) === 'xml' ? 'http://www.w3.org/XML/1998/namespace' : (scope.get(prefixOf(k)) ?? '')) : '',
      local: localOf(k),
    }))
    .sort((a, b) => (a.uri === b.uri ? (a.local < b.local ? -1 : a.local > b.local ? 1 : 0) : a.uri < b.uri ? -1 : 1));
  let out = `<${tag}`;
  for (const [p, uri] of decls) out += p ? ` xmlns:${p}="${escAttr(uri)}"` : ` xmlns="${escAttr(uri)}"`;
  for (const a of sortedAttrs) out += ` ${a.k}="${escAttr(a.v)}"`;
  out += '>';
  for (const child of kids(node)) out += excC14n(child, scope, nextRendered);
  return `${out}</${tag}>`;
}

interface Located {
  node: PNode;
  scope: Map<string, string>;
}

/** Depth-first search with the in-scope namespaces of each element. */
function findAll(
  nodes: PNode[],
  scope: Map<string, string>,
  pred: (node: PNode, scope: Map<string, string>) => boolean,
  out: Located[] = [],
): Located[] {
  for (const node of nodes) {
    if (!tagOf(node)) continue;
    const inner = scopeWith(node, scope);
    if (pred(node, inner)) out.push({ node, scope });
    findAll(kids(node), inner, pred, out);
  }
  return out;
}
function isElement(ns: string, local: string) {
  return (node: PNode, scope: Map<string, string>) => {
    const tag = tagOf(node) as string;
    return localOf(tag) === local && (scope.get(prefixOf(tag)) ?? '') === ns;
  };
}
function textOf(node: PNode): string {
  return kids(node)
    .map((k) => (tagOf(k) ? textOf(k) : decodeEntities(String(k['#text'] ?? ''))))
    .join('');
}
function child(node: PNode, local: string): PNode | undefined {
  return kids(node).find((k) => tagOf(k) && localOf(tagOf(k) as string) === local);
}
function attrLocal(node: PNode, local: string, scope: Map<string, string>, ns?: string): string | undefined {
  const inner = scopeWith(node, scope);
  for (const [k, v] of Object.entries(attrsOf(node))) {
    if (localOf(k) !== local || k.startsWith('xmlns')) continue;
    const uri = prefixOf(k) ? (inner.get(prefixOf(k)) ?? '') : '';
    if (ns === undefined || uri === ns) return v;
  }
  return undefined;
}

export class SecurityCheckError extends Error {}

/**
 * Verifies the WS-Security header of an envelope as DIAN's WCF endpoint would; returns the
 * operation's parsed parameters. Throws SecurityCheckError with the reason.
 */
export function verifySecuredEnvelope(
  xml: string,
  expected: { to: string; now: Date; skewMs?: number },
): { action: string; operation: string; params: Record<string, string> } {
  let tree: PNode[];
  try {
    tree = orderedParser.parse(xml) as PNode[];
  } catch (err) {
    throw new SecurityCheckError(`unparseable envelope: ${(err as Error).message}`);
  }
  const root = new Map<string, string>();
  const one = (pred: (n: PNode, s: Map<string, string>) => boolean, what: string): Located => {
    const found = findAll(tree, root, pred);
    if (found.length !== 1) throw new SecurityCheckError(`expected exactly one ${what}, found ${found.length}`);
    return found[0];
  };
  const wsuId = (node: PNode, scope: Map<string, string>) => attrLocal(node, 'Id', scope, WSU) ?? attrLocal(node, 'Id', scope, '');

  // Timestamp.
  const ts = one((n, s) => localOf(tagOf(n) as string) === 'Timestamp' && s.get(prefixOf(tagOf(n) as string)) === WSU, 'wsu:Timestamp');
  const created = Date.parse(textOf(child(ts.node, 'Created') ?? {}));
  const expires = Date.parse(textOf(child(ts.node, 'Expires') ?? {}));
  const skew = expected.skewMs ?? 5 * 60_000;
  const now = expected.now.getTime();
  if (!Number.isFinite(created) || !Number.isFinite(expires)) throw new SecurityCheckError('timestamp without Created/Expires');
  if (now > expires) throw new SecurityCheckError('the message has expired (wsu:Expires in the past)');
  if (created > now + skew) throw new SecurityCheckError('wsu:Created in the future');

  // Addressing.
  const to = one(isElement(WSA, 'To'), 'wsa:To');
  if (textOf(to.node) !== expected.to) throw new SecurityCheckError(`wsa:To ${textOf(to.node)} is not this endpoint`);
  const action = textOf(one(isElement(WSA, 'Action'), 'wsa:Action').node);
  if (!action.startsWith(ACTION_BASE)) throw new SecurityCheckError(`unknown action ${action}`);
  const toId = wsuId(to.node, to.scope);
  if (!toId) throw new SecurityCheckError('wsa:To carries no wsu:Id');

  // Signature.
  const signedInfo = one(isElement(DS, 'SignedInfo'), 'ds:SignedInfo');
  const sigNode = one(isElement(DS, 'Signature'), 'ds:Signature');
  const algorithm = (name: string, parent: PNode) => {
    const n = child(parent, name);
    return n ? attrLocal(n, 'Algorithm', new Map()) : undefined;
  };
  if (algorithm('CanonicalizationMethod', signedInfo.node) !== EXC_C14N)
    throw new SecurityCheckError('SignedInfo is not canonicalized with exclusive C14N');
  if (algorithm('SignatureMethod', signedInfo.node) !== RSA_SHA256) throw new SecurityCheckError('signature method is not RSA-SHA256');
  const references = kids(signedInfo.node).filter((k) => tagOf(k) && localOf(tagOf(k) as string) === 'Reference');
  const toReference = references.find((r) => attrLocal(r, 'URI', new Map()) === `#${toId}`);
  if (!toReference) throw new SecurityCheckError('the signature does not cover wsa:To');
  const transforms = kids(child(toReference, 'Transforms') ?? {}).filter((k) => tagOf(k));
  if (transforms.length !== 1 || attrLocal(transforms[0], 'Algorithm', new Map()) !== EXC_C14N)
    throw new SecurityCheckError('wsa:To reference transform is not exclusive C14N');
  if (algorithm('DigestMethod', toReference) !== SHA256) throw new SecurityCheckError('digest method is not SHA-256');
  const digest = createHash('sha256').update(excC14n(to.node, to.scope), 'utf8').digest('base64');
  if (digest !== textOf(child(toReference, 'DigestValue') ?? {}).trim()) throw new SecurityCheckError('digest of wsa:To does not match');

  // Key: SecurityTokenReference → BinarySecurityToken.
  const keyInfo = child(sigNode.node, 'KeyInfo');
  const str = keyInfo && child(keyInfo, 'SecurityTokenReference');
  const ref = str && child(str, 'Reference');
  const tokenUri = ref && attrLocal(ref, 'URI', new Map());
  if (!tokenUri?.startsWith('#')) throw new SecurityCheckError('KeyInfo has no SecurityTokenReference');
  const token = findAll(tree, root, (n, s) => localOf(tagOf(n) as string) === 'BinarySecurityToken' && wsuId(n, s) === tokenUri.slice(1));
  if (token.length !== 1) throw new SecurityCheckError('the referenced BinarySecurityToken is missing');
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(Buffer.from(textOf(token[0].node).replace(/\s+/g, ''), 'base64'));
  } catch {
    throw new SecurityCheckError('the BinarySecurityToken is not an X.509 certificate');
  }
  const canonicalSignedInfo = excC14n(signedInfo.node, signedInfo.scope);
  const signatureValue = Buffer.from(textOf(child(sigNode.node, 'SignatureValue') ?? {}).replace(/\s+/g, ''), 'base64');
  if (!verify('sha256', Buffer.from(canonicalSignedInfo, 'utf8'), cert.publicKey, signatureValue)) {
    throw new SecurityCheckError('the signature value does not verify with the token key');
  }

  // Body: the operation and its parameters.
  const body = one(
    (n, s) => localOf(tagOf(n) as string) === 'Body' && s.get(prefixOf(tagOf(n) as string)) === 'http://www.w3.org/2003/05/soap-envelope',
    'soap:Body',
  );
  const opNode = kids(body.node).find((k) => tagOf(k));
  if (!opNode) throw new SecurityCheckError('empty body');
  const operation = localOf(tagOf(opNode) as string);
  if (action !== ACTION_BASE + operation) throw new SecurityCheckError(`wsa:Action ${action} does not match the body operation ${operation}`);
  const params: Record<string, string> = {};
  for (const p of kids(opNode)) if (tagOf(p)) params[localOf(tagOf(p) as string)] = textOf(p);
  return { action, operation, params };
}

// ---------------------------------------------------------------------------------------------
// DIAN-shaped answers.

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

function envelope(operation: string, result: string, now: Date): string {
  const created = now.toISOString();
  const expires = new Date(now.getTime() + 5 * 60_000).toISOString();
  return (
    `<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope" xmlns:a="${WSA}" xmlns:u="${WSU}">` +
    `<s:Header><a:Action s:mustUnderstand="1">${ACTION_BASE}${operation}Response</a:Action>` +
    `<o:Security s:mustUnderstand="1" xmlns:o="http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-secext-1.0.xsd">` +
    `<u:Timestamp u:Id="_0"><u:Created>${created}</u:Created><u:Expires>${expires}</u:Expires></u:Timestamp></o:Security></s:Header>` +
    `<s:Body><${operation}Response xmlns="http://wcf.dian.colombia">${result}</${operation}Response></s:Body></s:Envelope>`
  );
}

function fault(reason: string): string {
  return (
    `<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope" xmlns:a="${WSA}"><s:Header><a:Action s:mustUnderstand="1">http://www.w3.org/2005/08/addressing/soap/fault</a:Action></s:Header>` +
    `<s:Body><s:Fault><s:Code><s:Value>s:Sender</s:Value><s:Subcode><s:Value xmlns:a="http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-secext-1.0.xsd">a:InvalidSecurity</s:Value></s:Subcode></s:Code>` +
    `<s:Reason><s:Text xml:lang="en-US">${esc(reason)}</s:Text></s:Reason></s:Fault></s:Body></s:Envelope>`
  );
}

interface ResponseFields {
  isValid: boolean;
  statusCode: string;
  description: string;
  messages: string[];
  key: string | null;
  applicationResponse: string | null;
  fileName: string | null;
}

function dianResponseFields(f: ResponseFields): string {
  return (
    `<b:ErrorMessage xmlns:c="http://schemas.microsoft.com/2003/10/Serialization/Arrays">${f.messages.map((m) => `<c:string>${esc(m)}</c:string>`).join('')}</b:ErrorMessage>` +
    `<b:IsValid>${f.isValid}</b:IsValid>` +
    `<b:StatusCode>${f.statusCode}</b:StatusCode>` +
    `<b:StatusDescription>${esc(f.description)}</b:StatusDescription>` +
    `<b:StatusMessage>${esc(f.description)}</b:StatusMessage>` +
    (f.applicationResponse
      ? `<b:XmlBase64Bytes>${Buffer.from(f.applicationResponse).toString('base64')}</b:XmlBase64Bytes>`
      : `<b:XmlBase64Bytes i:nil="true"/>`) +
    `<b:XmlBytes i:nil="true"/>` +
    (f.key ? `<b:XmlDocumentKey>${esc(f.key)}</b:XmlDocumentKey>` : `<b:XmlDocumentKey i:nil="true"/>`) +
    (f.fileName ? `<b:XmlFileName>${esc(f.fileName)}</b:XmlFileName>` : `<b:XmlFileName i:nil="true"/>`)
  );
}

const RESULT_NS = `xmlns:b="http://schemas.datacontract.org/2004/07/DianResponse" xmlns:i="http://www.w3.org/2001/XMLSchema-instance"`;

export function fakeApplicationResponse(key: string): string {
  return (
    `<?xml version="1.0" encoding="UTF-8"?><ApplicationResponse xmlns="urn:oasis:names:specification:ubl:schema:xsd:ApplicationResponse-2" ` +
    `xmlns:cbc="urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2" xmlns:cac="urn:oasis:names:specification:ubl:schema:xsd:CommonAggregateComponents-2">` +
    `<cbc:UBLVersionID>UBL 2.1</cbc:UBLVersionID><cbc:ProfileID>DIAN 2.1</cbc:ProfileID><cbc:ID>fake-${key.slice(0, 12)}</cbc:ID>` +
    `<cac:DocumentResponse><cac:Response><cbc:ResponseCode>02</cbc:ResponseCode><cbc:Description>Documento validado por la DIAN</cbc:Description></cac:Response>` +
    `<cac:DocumentReference><cbc:ID>${esc(key)}</cbc:ID><cbc:UUID schemeName="CUFE-SHA384">${esc(key)}</cbc:UUID></cac:DocumentReference></cac:DocumentResponse></ApplicationResponse>`
  );
}

/** The document key of a submitted XML: its `cbc:UUID` (CUFE/CUDE), else the SHA-384 of the text. */
export function documentKeyOf(xml: string): string {
  const m = /<(?:\w+:)?UUID\b[^>]*>([^<]+)</.exec(xml);
  return m ? m[1].trim() : createHash('sha384').update(xml).digest('hex');
}

export interface FakeDianServerOptions {
  now?: () => Date;
  testSetId?: string;
  ranges?: FakeRange[];
}

export class FakeDianServer {
  url = '';
  readonly calls: FakeCall[] = [];
  /** Reasons the security check refused requests. */
  readonly refused: string[] = [];
  private server: Server | null = null;
  private readonly scripts = new Map<string, FakeDocumentScript>();
  private readonly documents = new Map<string, DocState>();
  private readonly zips = new Map<string, string[]>();
  private readonly hanging = new Set<ServerResponse>();
  private readonly now: () => Date;
  ranges: FakeRange[];

  constructor(private readonly options: FakeDianServerOptions = {}) {
    this.now = options.now ?? (() => new Date());
    this.ranges = options.ranges ?? [];
  }

  /** Scripts what happens to the document with this key (`*`: every unscripted document). */
  script(key: string, script: FakeDocumentScript): this {
    this.scripts.set(key, script);
    return this;
  }

  callsOf(operation: string): FakeCall[] {
    return this.calls.filter((c) => c.operation === operation);
  }

  async start(): Promise<string> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    const { port } = this.server.address() as AddressInfo;
    this.url = new URL(`http://127.0.0.1:${port}/WcfDianCustomerServices.svc`).toString();
    return this.url;
  }

  async stop(): Promise<void> {
    for (const res of this.hanging) res.destroy();
    this.hanging.clear();
    if (!this.server) return;
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server!.close(() => resolve()));
    this.server = null;
  }

  private scriptFor(key: string): FakeDocumentScript {
    return this.scripts.get(key) ?? this.scripts.get('*') ?? { verdict: { status: 'accepted' } };
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const xml = Buffer.concat(chunks).toString('utf8');
    const send = (status: number, body: string) => {
      res.writeHead(status, { 'content-type': 'application/soap+xml; charset=utf-8' });
      res.end(body);
    };
    const contentType = req.headers['content-type'] ?? '';
    let checked: ReturnType<typeof verifySecuredEnvelope>;
    try {
      if (req.method !== 'POST' || !/^application\/soap\+xml/i.test(contentType)) throw new SecurityCheckError('not a SOAP 1.2 request');
      checked = verifySecuredEnvelope(xml, { to: this.url, now: this.now() });
      const headerAction = /action="?([^";]+)"?/i.exec(contentType)?.[1];
      if (headerAction !== checked.action) throw new SecurityCheckError('content-type action differs from wsa:Action');
    } catch (err) {
      const reason = err instanceof SecurityCheckError ? err.message : String(err);
      this.refused.push(reason);
      send(500, fault('An error occurred when verifying security for the message.'));
      return;
    }
    const { operation, params } = checked;
    const keys = params.contentFile ? this.keysOfZip(params.contentFile) : [];
    this.calls.push({ operation, params, documentKeys: keys.map((k) => k.key) });
    const reply = (result: string) => send(200, envelope(operation, `<${operation}Result ${RESULT_NS}>${result}</${operation}Result>`, this.now()));

    switch (operation) {
      case 'SendBillSync': {
        if (keys.length !== 1) {
          reply(
            dianResponseFields({
              isValid: false,
              statusCode: '99',
              description: 'Validación contiene errores en campos mandatorios.',
              messages: ['Regla: ZB01, Rechazo: El archivo zip debe contener un único documento.'],
              key: null,
              applicationResponse: null,
              fileName: null,
            }),
          );
          return;
        }
        const { key, name } = keys[0];
        if (this.documents.has(key)) {
          reply(
            dianResponseFields({
              isValid: false,
              statusCode: '99',
              description: 'Validación contiene errores en campos mandatorios.',
              messages: [`Regla: 90, Rechazo: Documento con CUFE '${key}' procesado anteriormente.`],
              key,
              applicationResponse: null,
              fileName: name,
            }),
          );
          return;
        }
        const script = this.scriptFor(key);
        if (script.submit === 'hang-lost') return this.hang(res);
        this.documents.set(key, { verdict: script.verdict, inProcessLeft: script.inProcessPolls ?? 0 });
        if (script.submit === 'hang') return this.hang(res);
        reply(this.statusFields(key, name));
        return;
      }
      case 'SendBillAsync':
      case 'SendTestSetAsync': {
        if (operation === 'SendTestSetAsync' && this.options.testSetId && params.testSetId !== this.options.testSetId) {
          reply(
            `<b:ErrorMessageList xmlns:c="http://schemas.datacontract.org/2004/07/XmlParamsResponseTrackId"><c:XmlParamsResponseTrackId><c:DocumentKey i:nil="true"/><c:ProcessedMessage>Set de pruebas no existe.</c:ProcessedMessage><c:Success>false</c:Success><c:XmlFileName>${esc(params.fileName ?? '')}</c:XmlFileName></c:XmlParamsResponseTrackId></b:ErrorMessageList><b:ZipKey i:nil="true"/>`,
          );
          return;
        }
        const zipKey = randomUUID();
        const fresh = keys.filter((k) => !this.documents.has(k.key));
        const lost = keys.some((k) => this.scriptFor(k.key).submit === 'hang-lost');
        if (lost) return this.hang(res);
        for (const k of fresh) {
          const s = this.scriptFor(k.key);
          this.documents.set(k.key, { verdict: s.verdict, inProcessLeft: s.inProcessPolls ?? 0 });
        }
        this.zips.set(
          zipKey,
          keys.map((k) => k.key),
        );
        if (keys.some((k) => this.scriptFor(k.key).submit === 'hang')) return this.hang(res);
        reply(`<b:ErrorMessageList xmlns:c="http://schemas.datacontract.org/2004/07/XmlParamsResponseTrackId"/><b:ZipKey>${zipKey}</b:ZipKey>`);
        return;
      }
      case 'GetStatus': {
        reply(this.statusFields(params.trackId ?? '', null));
        return;
      }
      case 'GetStatusZip': {
        const zipKeys = this.zips.get(params.trackId ?? '');
        const items = zipKeys ? zipKeys.map((k) => this.statusFields(k, null)) : [dianResponseFields(this.notFound(params.trackId ?? ''))];
        reply(items.map((i) => `<b:DianResponse>${i}</b:DianResponse>`).join(''));
        return;
      }
      case 'GetNumberingRange': {
        const list = this.ranges
          .map(
            (r) =>
              `<c:NumberingRangeResponse><c:ResolutionNumber>${esc(r.resolutionNumber)}</c:ResolutionNumber><c:ResolutionDate>${r.resolutionDate}</c:ResolutionDate>` +
              `<c:Prefix>${esc(r.prefix)}</c:Prefix><c:FromNumber>${r.fromNumber}</c:FromNumber><c:ToNumber>${r.toNumber}</c:ToNumber>` +
              `<c:ValidDateFrom>${r.validDateFrom}</c:ValidDateFrom><c:ValidDateTo>${r.validDateTo}</c:ValidDateTo><c:TechnicalKey>${esc(r.technicalKey)}</c:TechnicalKey></c:NumberingRangeResponse>`,
          )
          .join('');
        const found = this.ranges.length > 0;
        send(
          200,
          envelope(
            operation,
            `<GetNumberingRangeResult xmlns:b="http://schemas.datacontract.org/2004/07/NumberingRangeResponseList" xmlns:i="http://www.w3.org/2001/XMLSchema-instance">` +
              `<b:OperationCode>${found ? '100' : '301'}</b:OperationCode><b:OperationDescription>${found ? 'Acción completada OK.' : 'No se encontraron rangos de numeración.'}</b:OperationDescription>` +
              `<b:ResponseList xmlns:c="http://schemas.datacontract.org/2004/07/NumberingRangeResponse">${list}</b:ResponseList></GetNumberingRangeResult>`,
            this.now(),
          ),
        );
        return;
      }
      default:
        send(500, fault(`unknown operation ${operation}`));
    }
  }

  private hang(res: ServerResponse): void {
    this.hanging.add(res);
    res.on('close', () => this.hanging.delete(res));
  }

  private keysOfZip(contentFile: string): Array<{ key: string; name: string }> {
    try {
      return unzipTexts(Buffer.from(contentFile, 'base64')).map((f) => ({ key: documentKeyOf(f.text), name: f.name }));
    } catch {
      return [];
    }
  }

  private notFound(trackId: string): ResponseFields {
    return {
      isValid: false,
      statusCode: '66',
      description: 'TrackId no existe en los registros de la DIAN.',
      messages: [],
      key: trackId || null,
      applicationResponse: null,
      fileName: null,
    };
  }

  private statusFields(key: string, fileName: string | null): string {
    const doc = this.documents.get(key);
    if (!doc) return dianResponseFields(this.notFound(key));
    if (doc.inProcessLeft > 0) {
      doc.inProcessLeft--;
      return dianResponseFields({
        isValid: false,
        statusCode: '98',
        description: 'En proceso de validación.',
        messages: [],
        key,
        applicationResponse: null,
        fileName,
      });
    }
    if (doc.verdict.status === 'accepted') {
      return dianResponseFields({
        isValid: true,
        statusCode: '00',
        description: 'Procesado Correctamente.',
        messages: doc.verdict.notifications ?? [],
        key,
        applicationResponse: fakeApplicationResponse(key),
        fileName,
      });
    }
    return dianResponseFields({
      isValid: false,
      statusCode: '99',
      description: doc.verdict.description ?? 'Validación contiene errores en campos mandatorios.',
      messages: doc.verdict.messages,
      key,
      applicationResponse: null,
      fileName,
    });
  }
}

// ---------------------------------------------------------------------------------------------
// Test certificates: a self-signed RSA certificate in a PKCS#12, generated at run time (no private
// key is ever committed). Keys come from node:crypto (fast); node-forge builds the cert and p12.

export function makeTestCertificate(opts: { commonName?: string; password?: string; notBefore?: Date; notAfter?: Date } = {}): {
  p12: Buffer;
  password: string;
  certificatePem: string;
} {
  const password = opts.password ?? 'test-password';
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const forgeKey = forge.pki.privateKeyFromPem(privateKey.export({ type: 'pkcs1', format: 'pem' }).toString());
  const forgePub = forge.pki.publicKeyFromPem(publicKey.export({ type: 'spki', format: 'pem' }).toString());
  const cert = forge.pki.createCertificate();
  cert.publicKey = forgePub;
  cert.serialNumber = '01' + randomBytes(7).toString('hex');
  cert.validity.notBefore = opts.notBefore ?? new Date(Date.now() - 24 * 3600_000);
  cert.validity.notAfter = opts.notAfter ?? new Date(Date.now() + 365 * 24 * 3600_000);
  const attrs = [
    { name: 'commonName', value: opts.commonName ?? 'Recaudo Test Company' },
    { name: 'countryName', value: 'CO' },
    { name: 'organizationName', value: 'Recaudo Test' },
  ];
  cert.setSubject(attrs);
  cert.setIssuer(attrs);
  cert.sign(forgeKey, forge.md.sha256.create());
  const asn1 = forge.pkcs12.toPkcs12Asn1(forgeKey, [cert], password, { algorithm: '3des' });
  const p12 = Buffer.from(forge.asn1.toDer(asn1).getBytes(), 'binary');
  return { p12, password, certificatePem: forge.pki.certificateToPem(cert) };
}

/** A stand-in "signed XML" for transport tests: only its cbc:UUID (the document key) matters here. */
export function transportTestXml(key: string, extra = ''): string {
  return (
    `<?xml version="1.0" encoding="UTF-8"?><Invoice xmlns="urn:oasis:names:specification:ubl:schema:xsd:Invoice-2" ` +
    `xmlns:cbc="urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2"><cbc:ID>SETP990000001</cbc:ID>` +
    `<cbc:UUID schemeID="2" schemeName="CUFE-SHA384">${key}</cbc:UUID>${extra}</Invoice>`
  );
}
