import net from 'node:net';

/**
 * A tiny SMTP server for tests: speaks enough SMTP for nodemailer (EHLO/HELO, AUTH PLAIN/LOGIN,
 * MAIL FROM, RCPT TO, DATA, RSET, NOOP, QUIT; no TLS), keeps every message it receives, and can
 * be told to refuse. `parseMail` decodes what arrived (headers, encoded words, multipart,
 * quoted-printable and base64) so tests can assert on the text a person would read.
 */

export interface SinkMessage {
  from: string;
  to: string[];
  /** The message as sent (after dot-unstuffing), decoded as UTF-8. */
  raw: string;
  /** The `user` of a successful AUTH on the session, if any. */
  user: string | undefined;
}

export interface SmtpSinkOptions {
  /** When set, MAIL FROM needs a successful AUTH with these credentials. */
  auth?: { user: string; pass: string };
}

export interface SmtpSink {
  port: number;
  /** `smtp://user:pass@127.0.0.1:port` (credentials URL-encoded when given). */
  url(credentials?: { user: string; pass: string }): string;
  messages: SinkMessage[];
  /** Resolves with the next message received (or the first not yet awaited). */
  nextMessage(timeoutMs?: number): Promise<SinkMessage>;
  /** Reply to RCPT TO with this line (e.g. `550 5.1.1 no such user`) for matching addresses. */
  rejectRecipient?: (address: string) => string | undefined;
  /** Reply to the end of DATA with this line instead of accepting (e.g. `451 4.3.0 try later`). */
  rejectData?: string;
  /** Accept the connection but never answer (for timeouts). */
  silent?: boolean;
  close(): Promise<void>;
}

export async function startSmtpSink(opts: SmtpSinkOptions = {}): Promise<SmtpSink> {
  const sockets = new Set<net.Socket>();
  let awaited = 0;
  const waiters: ((m: SinkMessage) => void)[] = [];
  const sink: SmtpSink = {
    port: 0,
    url(credentials) {
      const auth = credentials ? `${encodeURIComponent(credentials.user)}:${encodeURIComponent(credentials.pass)}@` : '';
      return `smtp://${auth}127.0.0.1:${sink.port}`;
    },
    messages: [],
    nextMessage(timeoutMs = 5_000) {
      if (awaited < sink.messages.length) return Promise.resolve(sink.messages[awaited++]);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no message reached the SMTP sink')), timeoutMs);
        waiters.push((m) => {
          clearTimeout(timer);
          awaited++;
          resolve(m);
        });
      });
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };

  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    if (sink.silent) return;
    const reply = (line: string) => socket.write(`${line}\r\n`);
    let buffer = Buffer.alloc(0);
    let mode: 'command' | 'data' | 'auth-plain' | 'auth-user' | 'auth-pass' = 'command';
    let user: string | undefined;
    let pendingUser = '';
    let from: string | undefined;
    let to: string[] = [];
    let dataLines: Buffer[] = [];

    const checkAuth = (u: string, p: string) => {
      if (opts.auth && u === opts.auth.user && p === opts.auth.pass) {
        user = u;
        reply('235 2.7.0 Authentication successful');
      } else {
        reply('535 5.7.8 Authentication credentials invalid');
      }
    };
    const plain = (b64: string) => {
      const [, u = '', p = ''] = Buffer.from(b64, 'base64').toString('utf8').split('\u0000');
      checkAuth(u, p);
    };

    const onLine = (lineBuf: Buffer) => {
      if (mode === 'data') {
        if (lineBuf.length === 1 && lineBuf[0] === 0x2e) {
          mode = 'command';
          const message: SinkMessage = { from: from ?? '', to, raw: Buffer.concat(dataLines).toString('utf8'), user };
          from = undefined;
          to = [];
          dataLines = [];
          if (sink.rejectData) return reply(sink.rejectData);
          sink.messages.push(message);
          reply(`250 2.0.0 Ok: queued as ${sink.messages.length}`);
          const waiter = waiters.shift();
          waiter?.(message);
          return;
        }
        // Dot-unstuffing (RFC 5321 4.5.2).
        const content = lineBuf[0] === 0x2e ? lineBuf.subarray(1) : lineBuf;
        dataLines.push(content, Buffer.from('\r\n'));
        return;
      }
      const line = lineBuf.toString('utf8');
      if (mode === 'auth-plain') {
        mode = 'command';
        return plain(line);
      }
      if (mode === 'auth-user') {
        pendingUser = Buffer.from(line, 'base64').toString('utf8');
        mode = 'auth-pass';
        return reply('334 UGFzc3dvcmQ6');
      }
      if (mode === 'auth-pass') {
        mode = 'command';
        return checkAuth(pendingUser, Buffer.from(line, 'base64').toString('utf8'));
      }
      const [verb = '', ...rest] = line.split(' ');
      const arg = rest.join(' ');
      switch (verb.toUpperCase()) {
        case 'EHLO':
          return reply(['250-sink.test', '250-8BITMIME', '250-SMTPUTF8', '250-AUTH PLAIN LOGIN', '250 SIZE 10485760'].join('\r\n'));
        case 'HELO':
          return reply('250 sink.test');
        case 'AUTH': {
          const [mech = '', initial] = arg.split(' ');
          if (mech.toUpperCase() === 'PLAIN') {
            if (initial) return plain(initial);
            mode = 'auth-plain';
            return reply('334 ');
          }
          if (mech.toUpperCase() === 'LOGIN') {
            if (initial) {
              pendingUser = Buffer.from(initial, 'base64').toString('utf8');
              mode = 'auth-pass';
              return reply('334 UGFzc3dvcmQ6');
            }
            mode = 'auth-user';
            return reply('334 VXNlcm5hbWU6');
          }
          return reply('504 5.5.4 Unrecognized authentication type');
        }
        case 'MAIL': {
          if (opts.auth && !user) return reply('530 5.7.0 Authentication required');
          const m = /^FROM:\s*<([^>]*)>/i.exec(arg);
          if (!m) return reply('501 5.5.4 Syntax: MAIL FROM:<address>');
          from = m[1];
          to = [];
          return reply('250 2.1.0 Ok');
        }
        case 'RCPT': {
          if (from === undefined) return reply('503 5.5.1 Need MAIL first');
          const m = /^TO:\s*<([^>]+)>/i.exec(arg);
          if (!m) return reply('501 5.5.4 Syntax: RCPT TO:<address>');
          const refusal = sink.rejectRecipient?.(m[1]);
          if (refusal) return reply(refusal);
          to.push(m[1]);
          return reply('250 2.1.5 Ok');
        }
        case 'DATA':
          if (to.length === 0) return reply('503 5.5.1 Need RCPT first');
          mode = 'data';
          dataLines = [];
          return reply('354 End data with <CR><LF>.<CR><LF>');
        case 'RSET':
          from = undefined;
          to = [];
          return reply('250 2.0.0 Ok');
        case 'NOOP':
          return reply('250 2.0.0 Ok');
        case 'QUIT':
          reply('221 2.0.0 Bye');
          return void socket.end();
        default:
          return reply('502 5.5.2 Command not recognized');
      }
    };

    socket.on('data', (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      let at: number;
      while ((at = buffer.indexOf('\r\n')) !== -1) {
        const lineBuf = buffer.subarray(0, at);
        buffer = buffer.subarray(at + 2);
        onLine(lineBuf);
      }
    });
    reply('220 sink.test ESMTP test sink');
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  sink.port = (server.address() as net.AddressInfo).port;
  return sink;
}

// ---- decoding what arrived ----

export interface ParsedPart {
  headers: Map<string, string>;
  contentType: string;
  params: Record<string, string>;
  body: Buffer;
}

export interface ParsedMail {
  /** Header values by lowercase name, unfolded and with encoded words decoded (the last one wins). */
  headers: Map<string, string>;
  header(name: string): string | undefined;
  text: string | undefined;
  html: string | undefined;
  attachments: { filename: string | undefined; contentType: string; content: Buffer }[];
  /** Every leaf part, in order. */
  parts: ParsedPart[];
}

/** RFC 2047 encoded words (`=?UTF-8?Q?...?=` / `?B?`), as a person reads them. */
export function decodeWords(value: string): string {
  return value
    .replace(/(=\?[^?]+\?[QqBb]\?[^?]*\?=)\s+(?==\?[^?]+\?[QqBb]\?[^?]*\?=)/g, '$1')
    .replace(/=\?([^?]+)\?([QqBb])\?([^?]*)\?=/g, (_, charset: string, enc: string, data: string) => {
      const bytes =
        enc.toUpperCase() === 'B'
          ? Buffer.from(data, 'base64')
          : Buffer.from(
              data.replace(/_/g, ' ').replace(/=([0-9A-Fa-f]{2})/g, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16))),
              'latin1',
            );
      return new TextDecoder(charset.toLowerCase()).decode(bytes);
    });
}

function splitHeaders(raw: string): { headers: Map<string, string>; body: string } {
  const at = raw.indexOf('\r\n\r\n');
  const head = at === -1 ? raw : raw.slice(0, at);
  const body = at === -1 ? '' : raw.slice(at + 4);
  const headers = new Map<string, string>();
  for (const line of head.replace(/\r\n[ \t]+/g, ' ').split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon > 0) headers.set(line.slice(0, colon).trim().toLowerCase(), decodeWords(line.slice(colon + 1).trim()));
  }
  return { headers, body };
}

function parseContentType(value: string | undefined): { type: string; params: Record<string, string> } {
  const [type = 'text/plain', ...rest] = (value ?? 'text/plain').split(';');
  const params: Record<string, string> = {};
  for (const p of rest) {
    const eq = p.indexOf('=');
    if (eq > 0)
      params[p.slice(0, eq).trim().toLowerCase()] = p
        .slice(eq + 1)
        .trim()
        .replace(/^"(.*)"$/, '$1');
  }
  return { type: type.trim().toLowerCase(), params };
}

function decodeBody(body: string, encoding: string | undefined): Buffer {
  switch ((encoding ?? '7bit').toLowerCase()) {
    case 'base64':
      return Buffer.from(body.replace(/\s+/g, ''), 'base64');
    case 'quoted-printable':
      return Buffer.from(
        body.replace(/=\r\n/g, '').replace(/=([0-9A-Fa-f]{2})/g, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16))),
        'latin1',
      );
    default:
      return Buffer.from(body, 'utf8');
  }
}

function leaves(raw: string, out: ParsedPart[], top = false): void {
  const split = splitHeaders(raw);
  const headers = split.headers;
  // A whole message ends with the line break of its last line; inside multipart, the boundary owns it.
  const body = top ? split.body.replace(/\r\n$/, '') : split.body;
  const { type, params } = parseContentType(headers.get('content-type'));
  if (type.startsWith('multipart/') && params.boundary) {
    const delimiter = `--${params.boundary}`;
    const sections = body.split(new RegExp(`(?:^|\\r\\n)${delimiter.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
    for (const section of sections.slice(1)) {
      if (section.startsWith('--')) break;
      leaves(section.replace(/^[ \t]*\r\n/, ''), out);
    }
    return;
  }
  out.push({ headers, contentType: type, params, body: decodeBody(body, headers.get('content-transfer-encoding')) });
}

export function parseMail(raw: string): ParsedMail {
  const { headers } = splitHeaders(raw);
  const parts: ParsedPart[] = [];
  leaves(raw, parts, true);
  const attachments: ParsedMail['attachments'] = [];
  let text: string | undefined;
  let html: string | undefined;
  for (const part of parts) {
    const disposition = part.headers.get('content-disposition') ?? '';
    const filename = parseContentType(disposition).params.filename ?? part.params.name;
    const charset = part.params.charset ?? 'utf-8';
    if (/^attachment/i.test(disposition) || filename) {
      attachments.push({ filename, contentType: part.contentType, content: part.body });
    } else if (part.contentType === 'text/plain' && text === undefined) {
      text = new TextDecoder(charset).decode(part.body).replace(/\r\n/g, '\n');
    } else if (part.contentType === 'text/html' && html === undefined) {
      html = new TextDecoder(charset).decode(part.body).replace(/\r\n/g, '\n');
    }
  }
  return { headers, header: (name) => headers.get(name.toLowerCase()), text, html, attachments, parts };
}
