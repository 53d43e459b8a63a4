// `node --import ./test/support/record-imports.mjs`: appends the URL of every module the process
// resolves through the ESM loader (static and dynamic imports) to RECORD_IMPORTS_FILE, one a line.
import fs from 'node:fs';
import { register } from 'node:module';
import { MessageChannel } from 'node:worker_threads';

const file = process.env.RECORD_IMPORTS_FILE;
const { port1, port2 } = new MessageChannel();
port1.on('message', (url) => fs.appendFileSync(file, `${url}\n`));
port1.unref();
const hooks = `let port;
export function initialize(data) { port = data.port; }
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  port.postMessage(result.url);
  return result;
}`;
register(`data:text/javascript,${encodeURIComponent(hooks)}`, { data: { port: port2 }, transferList: [port2] });
