// node --import ./loaded-packages.mjs: at exit, prints the npm packages the program loaded
// (every module resolved by the ES module loader, and every CommonJS module), one JSON line.
import { createRequire, register } from 'node:module';
import { MessageChannel } from 'node:worker_threads';

const { port1, port2 } = new MessageChannel();
const urls = new Set();
port1.on('message', (url) => urls.add(url));
port1.unref();
register('./loaded-packages-hooks.mjs', import.meta.url, { data: { port: port2 }, transferList: [port2] });

process.on('exit', () => {
  const cjs = Object.keys(createRequire(import.meta.url).cache);
  const packages = new Set();
  for (const file of [...urls, ...cjs]) {
    const match = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(file);
    if (match) packages.add(match[1]);
  }
  process.stderr.write(`LOADED_PACKAGES ${JSON.stringify([...packages].sort())}\n`);
});
