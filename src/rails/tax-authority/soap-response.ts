import { XMLParser } from 'fast-xml-parser';

/**
 * Parsing DIAN's SOAP answers (WCF DataContract serialization). Namespace prefixes are dropped
 * (DIAN's prefixes `s:`, `a:`, `b:`, `c:` vary with the serializer), so the parser reads local
 * names only. Shapes (reference/dian.md "Web service"):
 *
 * - DianResponse (SendBillSync, GetStatus, each item of GetStatusZip): IsValid, StatusCode
 *   (`00` processed OK, `99` rejected, `98` in process, `66` not found), StatusDescription,
 *   StatusMessage, ErrorMessage (a list of `string`: `Regla: FAD06, Rechazo: ...` or
 *   `Regla: ..., Notificación: ...`), XmlBase64Bytes (the ApplicationResponse), XmlDocumentKey
 *   (CUFE/CUDE), XmlFileName.
 * - UploadDocumentResponse (SendBillAsync, SendTestSetAsync): ZipKey, ErrorMessageList.
 * - NumberingRangeResponseList (GetNumberingRange): OperationCode, OperationDescription,
 *   ResponseList of NumberingRangeResponse (ResolutionNumber, ResolutionDate, Prefix, FromNumber,
 *   ToNumber, ValidDateFrom, ValidDateTo, TechnicalKey).
 */

export interface DianResponse {
  isValid: boolean;
  statusCode: string;
  statusDescription: string;
  statusMessage: string;
  errorMessages: string[];
  /** The ApplicationResponse XML, base64, when DIAN sends it. */
  xmlBase64Bytes: string | null;
  xmlDocumentKey: string | null;
  xmlFileName: string | null;
}

export interface UploadResponse {
  zipKey: string | null;
  errorMessages: string[];
}

export interface DianNumberingRange {
  resolutionNumber: string;
  resolutionDate: string;
  prefix: string;
  fromNumber: string;
  toNumber: string;
  validDateFrom: string;
  validDateTo: string;
  technicalKey: string;
}

export interface NumberingRangeResult {
  operationCode: string;
  operationDescription: string;
  ranges: DianNumberingRange[];
}

export interface SoapFault {
  code: string;
  subcode: string | null;
  reason: string;
}

const ARRAYS = new Set(['string', 'DianResponse', 'NumberingRangeResponse', 'XmlParamsResponseTrackId', 'Text']);

const parser = new XMLParser({
  removeNSPrefix: true,
  ignoreAttributes: false,
  attributeNamePrefix: '@_',
  parseTagValue: false,
  parseAttributeValue: false,
  trimValues: true,
  processEntities: true,
  htmlEntities: false,
  isArray: (name) => ARRAYS.has(name),
});

type Node = Record<string, unknown>;

function obj(v: unknown): Node | null {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Node) : null;
}

/** Text content of a parsed node (a string, or an object with `#text`); '' when absent or nil. */
function text(v: unknown): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  const o = obj(v);
  if (o && typeof o['#text'] !== 'undefined') return String(o['#text']);
  return '';
}

function textOrNull(v: unknown): string | null {
  const t = text(v);
  return t === '' ? null : t;
}

export class SoapParseError extends Error {}

/** The parsed `Body` of a SOAP envelope. */
export function soapBody(xml: string): Node {
  let doc: Node;
  try {
    doc = parser.parse(xml) as Node;
  } catch (err) {
    throw new SoapParseError(`unparseable SOAP answer: ${(err as Error).message}`);
  }
  const body = obj(obj(doc.Envelope)?.Body);
  if (!body) throw new SoapParseError('not a SOAP envelope');
  return body;
}

/** The SOAP 1.2 fault in a body, or null. */
export function parseFault(body: Node): SoapFault | null {
  const fault = obj(body.Fault);
  if (!fault) return null;
  const code = obj(fault.Code);
  const reasons = obj(fault.Reason)?.Text;
  const reason = Array.isArray(reasons) ? reasons.map(text).join(' ') : text(reasons);
  return { code: text(code?.Value), subcode: textOrNull(obj(code?.Subcode)?.Value), reason };
}

/** `<Op>Response/<Op>Result` of a body. */
export function operationResult(body: Node, operation: string): Node {
  const response = obj(body[`${operation}Response`]);
  if (!response) throw new SoapParseError(`no ${operation}Response in the SOAP body`);
  return obj(response[`${operation}Result`]) ?? {};
}

function stringList(v: unknown): string[] {
  const o = obj(v);
  if (!o) return [];
  const items = o.string;
  if (Array.isArray(items)) return items.map(text).filter((s) => s !== '');
  return [];
}

export function parseDianResponse(node: Node): DianResponse {
  return {
    isValid: text(node.IsValid).toLowerCase() === 'true',
    statusCode: text(node.StatusCode),
    statusDescription: text(node.StatusDescription),
    statusMessage: text(node.StatusMessage),
    errorMessages: stringList(node.ErrorMessage),
    xmlBase64Bytes: textOrNull(node.XmlBase64Bytes),
    xmlDocumentKey: textOrNull(node.XmlDocumentKey),
    xmlFileName: textOrNull(node.XmlFileName),
  };
}

export function parseUploadResponse(node: Node): UploadResponse {
  const list = obj(node.ErrorMessageList);
  const items = Array.isArray(list?.XmlParamsResponseTrackId) ? (list.XmlParamsResponseTrackId as unknown[]) : [];
  const errorMessages = items.flatMap((item) => {
    const o = obj(item) ?? {};
    const message = text(o.ProcessedMessage);
    return message ? [text(o.XmlFileName) ? `${text(o.XmlFileName)}: ${message}` : message] : [];
  });
  return { zipKey: textOrNull(node.ZipKey), errorMessages };
}

/** GetStatusZip answers a list of DianResponse (one per document of the zip). */
export function parseDianResponseList(node: Node): DianResponse[] {
  const items = node.DianResponse;
  if (Array.isArray(items)) return items.map((i) => parseDianResponse(obj(i) ?? {}));
  // Some serializations put the single response's fields directly in the result.
  return 'StatusCode' in node ? [parseDianResponse(node)] : [];
}

export function parseNumberingRanges(node: Node): NumberingRangeResult {
  const list = obj(node.ResponseList);
  const items = Array.isArray(list?.NumberingRangeResponse) ? (list.NumberingRangeResponse as unknown[]) : [];
  return {
    operationCode: text(node.OperationCode),
    operationDescription: text(node.OperationDescription),
    ranges: items.map((i) => {
      const o = obj(i) ?? {};
      return {
        resolutionNumber: text(o.ResolutionNumber),
        resolutionDate: text(o.ResolutionDate),
        prefix: text(o.Prefix),
        fromNumber: text(o.FromNumber),
        toNumber: text(o.ToNumber),
        validDateFrom: text(o.ValidDateFrom),
        validDateTo: text(o.ValidDateTo),
        technicalKey: text(o.TechnicalKey),
      };
    }),
  };
}

/** Rule codes of DIAN messages: `Regla: FAD06, Rechazo: ...` → `FAD06`. */
export function ruleCodes(messages: string[]): string[] {
  return messages.flatMap((m) => {
    const match = /Regla:\s*([^,\s]+)/i.exec(m);
    return match ? [match[1]] : [];
  });
}

/** Messages that reject (as opposed to notifications, `Notificación: ...`). */
export function rejectionMessages(messages: string[]): string[] {
  return messages.filter((m) => !/Notificaci[oó]n\s*:/i.test(m));
}

/** The rejection_reason text: the rejecting rule messages, else DIAN's status description. */
export function rejectionReason(response: DianResponse): string {
  const rejecting = rejectionMessages(response.errorMessages);
  const parts = rejecting.length ? rejecting : response.errorMessages;
  if (parts.length) return parts.join('; ');
  return response.statusDescription || response.statusMessage || `DIAN status ${response.statusCode || 'unknown'}`;
}

/** DIAN's rule 90: the document (same CUFE) was already processed. */
export function isAlreadyProcessed(response: DianResponse): boolean {
  return ruleCodes(response.errorMessages).includes('90');
}
