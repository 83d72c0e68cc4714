// tasklatch store bridge, the Node side (protocol: docs/store-bridge.md).
//
// Loads the user's module, resolves its factory, and answers one JSON request per stdin
// line with one JSON answer per stdout line. Every request is handled as it arrives, so
// calls overlap when tasklatch sends several before reading (the race engine). What a
// store throws is an answer (`thrown`), never a crash of the shim. The store's clock is
// Node's mocked `Date` and `setTimeout` (`node:test` mock timers), started at a fixed
// instant and moved only by `clock` requests, unless `--clock real`.
//
//   node node-shim.mjs MODULE FACTORY INTERFACE CLOCK
//     MODULE     path of the user's ES module (or a package specifier)
//     FACTORY    the export that makes a store: a function, or a class (called with `new`)
//     INTERFACE  ts-sdk (the TypeScript SDK 1.x `TaskStore`)
//     CLOCK      fake | real

import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';
import { mock } from 'node:test';
import { isAbsolute, resolve } from 'node:path';

const PROTOCOL = 1;
const FAKE_EPOCH_MS = 1_700_000_000_000;
const METHODS = {
  'ts-sdk': ['createTask', 'getTask', 'storeTaskResult', 'getTaskResult', 'updateTaskStatus', 'listTasks'],
};

const [modulePath, factoryName, iface, clockMode] = process.argv.slice(2);
const protocolOut = process.stdout;
// The user's code may log: its console goes to stderr so stdout stays protocol.
for (const level of ['log', 'info', 'debug', 'warn', 'dir', 'table', 'trace']) {
  console[level] = console.error;
}
const say = (message) => protocolOut.write(JSON.stringify(message) + '\n');
const fatal = (stage, error) => {
  say({ fatal: { stage, message: describe(error).message } });
  process.exit(2);
};

function describe(error) {
  if (error instanceof Error) {
    return { type: error.constructor?.name ?? 'Error', message: error.message, code: error.code ?? null };
  }
  return { type: typeof error, message: String(error), code: null };
}

// JSON has no `undefined`: `{"$undefined": true}` stands for it, both ways.
const UNDEFINED = { $undefined: true };
const decode = (value) =>
  value && typeof value === 'object' && !Array.isArray(value) && value.$undefined === true ? undefined : value;
const encode = (value) => (value === undefined ? UNDEFINED : value);

if (!METHODS[iface]) {
  fatal('interface', new Error(`unknown interface ${iface} (Node knows: ${Object.keys(METHODS).join(', ')})`));
}
if (clockMode === 'fake') {
  mock.timers.enable({ apis: ['Date', 'setTimeout', 'setInterval'], now: FAKE_EPOCH_MS });
}

let module;
try {
  const specifier = modulePath.startsWith('.') || isAbsolute(modulePath)
    ? pathToFileURL(resolve(modulePath)).href
    : modulePath;
  module = await import(specifier);
} catch (error) {
  fatal('load', error);
}
const factory = module[factoryName];
if (typeof factory !== 'function') {
  const exported = Object.keys(module).join(', ') || 'nothing';
  fatal('factory', new Error(`${modulePath} has no function or class export \`${factoryName}\` (it exports: ${exported})`));
}
const isClass = /^class[\s{]/.test(Function.prototype.toString.call(factory));

const stores = new Map();
let nextStore = 1;

async function open(request) {
  const options = { dir: request.dir };
  const store = isClass ? new factory(options) : await factory(options);
  const missing = METHODS[iface].filter((name) => typeof store?.[name] !== 'function');
  if (missing.length > 0) {
    throw new Error(`the store \`${factoryName}\` made lacks ${missing.join(', ')} of the ${iface} interface`);
  }
  const id = nextStore++;
  stores.set(id, store);
  return { store: id };
}

async function call(request) {
  const store = stores.get(request.store);
  if (!store) throw new Error(`bridge: no open store ${request.store}`);
  if (!METHODS[iface].includes(request.method)) throw new Error(`bridge: ${request.method} is not in ${iface}`);
  return encode(await store[request.method](...request.args.map(decode)));
}

async function close(request) {
  const store = stores.get(request.store);
  stores.delete(request.store);
  for (const name of ['cleanup', 'close', 'dispose']) {
    if (typeof store?.[name] === 'function') {
      await store[name]();
      break;
    }
  }
  return null;
}

function clock(request) {
  if (clockMode !== 'fake') throw new Error('bridge: the clock is real (--clock real)');
  if (request.advance_ms > 0) mock.timers.tick(request.advance_ms);
  return { now_ms: Date.now() };
}

const handlers = { open, call, close, clock };

async function answer(line) {
  let request;
  try {
    request = JSON.parse(line);
  } catch (error) {
    say({ id: null, bridge_error: `not JSON: ${describe(error).message}` });
    return;
  }
  const handler = handlers[request.op];
  if (!handler) {
    say({ id: request.id ?? null, bridge_error: `unknown op ${JSON.stringify(request.op)}` });
    return;
  }
  try {
    say({ id: request.id, ok: await handler(request) });
  } catch (error) {
    say({ id: request.id, thrown: describe(error) });
  }
}

// A store's unhandled rejection is reported, not fatal: the shim serves on.
process.on('unhandledRejection', (error) => say({ id: null, unhandled: describe(error) }));

say({
  hello: {
    bridge: PROTOCOL, language: 'node', runtime: process.version, interface: iface,
    module: modulePath, factory: factoryName, clock: clockMode,
    clock_start_ms: clockMode === 'fake' ? FAKE_EPOCH_MS : null,
  },
});
const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
lines.on('line', (line) => { if (line.trim() !== '') answer(line); });
lines.on('close', () => process.exit(0));
