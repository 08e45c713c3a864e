// Gantry's JavaScript kernel driver (SPEC §9). Embedded in the gantry
// binary and run with `node -e`, so nothing is written into the checkout.
//
// Frames as in python.py: a 4-byte big-endian length, then UTF-8 JSON, on
// the two descriptors named by GANTRY_KERNEL_FDS ("IN,OUT"). Cells run
// through V8's own REPL mode (the inspector's Runtime.evaluate with
// replMode, as Chrome's console): `let`/`const` may be declared again in a
// later cell, top-level `await` works, and the completion value is the
// echo. The evaluation runs inside `vm` with breakOnSigint, so SIGINT
// stops a running loop and leaves the state; a cell waiting on a promise
// is abandoned by the SIGINT listener instead.
'use strict';
(() => {
  const fs = require('fs');
  const net = require('net');
  const util = require('util');
  const vm = require('vm');
  const inspector = require('inspector');

  // The pipes as passed are inheritable, and node cannot mark them
  // close-on-exec: open them again (libuv opens with O_CLOEXEC) and close
  // the originals, so processes a cell starts never get them.
  const [inFd, outFd] = process.env.GANTRY_KERNEL_FDS.split(',').map((passed, index) => {
    const own = fs.openSync(`/proc/self/fd/${passed}`, index === 0 ? 'r' : 'w');
    fs.closeSync(Number(passed));
    return own;
  });
  delete process.env.GANTRY_KERNEL_FDS;
  // Written into stdout before each frame after the hello, so that the
  // host can put what was printed in order with the frames. On a copy of
  // stdout of our own, blocking whatever libuv makes of fd 1.
  const syncMarker = Buffer.from(process.env.GANTRY_KERNEL_SYNC, 'utf8');
  delete process.env.GANTRY_KERNEL_SYNC;
  let syncFd = null;

  function writeFrame(frame) {
    if (syncFd !== null) {
      try {
        fs.writeSync(syncFd, syncMarker);
      } catch {
        // The order of this frame with stdout is lost; nothing else is.
      }
    }
    const body = Buffer.from(JSON.stringify(frame), 'utf8');
    const head = Buffer.alloc(4);
    head.writeUInt32BE(body.length);
    const data = Buffer.concat([head, body]);
    let at = 0;
    while (at < data.length) {
      try {
        at += fs.writeSync(outFd, data, at);
      } catch (error) {
        if (error.code !== 'EAGAIN') throw error;
      }
    }
  }

  // -- rich output ----------------------------------------------------------
  const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47]);

  // A string is shown as itself by display() and quoted as an echo, as
  // node's REPL does.
  function bundle(value, quoteStrings) {
    if (Buffer.isBuffer(value) && value.subarray(0, 4).equals(PNG)) {
      return { 'image/png': value.toString('base64'), 'text/plain': `<PNG image, ${value.length} bytes>` };
    }
    if (typeof value === 'string' && !quoteStrings) return { 'text/plain': value };
    return { 'text/plain': util.inspect(value, { depth: 4, maxArrayLength: 100, maxStringLength: 10000 }) };
  }

  /** Shows each value in the cell's output: a PNG Buffer as an image, anything else as text. */
  function display(...values) {
    for (const value of values) writeFrame({ type: 'display', data: bundle(value, false) });
  }
  /** Shows Markdown text (a table, say) as such. */
  display.markdown = (text) => writeFrame({ type: 'display', data: { 'text/markdown': String(text), 'text/plain': String(text) } });
  /** Shows a PNG image, given as a Buffer or base64 text. */
  display.png = (data) => writeFrame({ type: 'display', data: { 'image/png': Buffer.isBuffer(data) ? data.toString('base64') : String(data), 'text/plain': '<PNG image>' } });

  // -- the tool bridge ----------------------------------------------------------
  class ToolError extends Error {
    constructor(message) {
      super(message);
      this.name = 'ToolError';
    }
  }
  const waiting = new Map();
  let calls = 0;

  /** Calls one of Gantry's tools, as the model would: await tool("read_file", {path: "README.md"}). Resolves to {text, parts}, which reads as its text. */
  function tool(name, args) {
    const id = ++calls;
    return new Promise((resolve, reject) => {
      waiting.set(id, { resolve, reject });
      writeFrame({ type: 'tool_call', id, name: String(name), args: args || {} });
    });
  }

  function answered(frame) {
    const call = waiting.get(frame.id);
    if (!call) return;
    waiting.delete(frame.id);
    if (frame.ok) {
      const text = frame.text || '';
      call.resolve({ text, parts: frame.parts || [], toString: () => text, [util.inspect.custom]: () => util.inspect(text) });
    } else {
      call.reject(new ToolError(frame.error || 'the tool failed'));
    }
  }

  // -- cells ------------------------------------------------------------------------
  const session = new inspector.Session();
  session.connect();
  const post = (method, params) => new Promise((resolve, reject) => {
    session.post(method, params, (error, result) => (error ? reject(error) : resolve(result)));
  });

  let captured;
  let current = null; // the running cell: {id, finish}
  let cellIds = 0;
  const hidden = (name, value) => Object.defineProperty(globalThis, name, { value, writable: true, enumerable: false });
  hidden('__gantryCapture', (v) => { captured = v; });
  hidden('__gantryCode', '');
  // Code evaluated through the inspector has no dynamic-import callback
  // of its own: `import(x)` in a cell is routed to the driver's.
  hidden('__gantryImport', (specifier) => import(specifier));
  hidden('__gantryDone', null);
  // Runs in `vm` so that SIGINT breaks a synchronous loop of the cell.
  hidden('__gantryEvaluate', (code, done) => {
    session.post('Runtime.evaluate', { expression: code, replMode: true, awaitPromise: true }, done);
  });
  // Where a cell's code runs it has no module scope: give it what `node` has.
  Object.assign(globalThis, { require, display, tool, ToolError });
  const baseline = new Set(Object.getOwnPropertyNames(globalThis));

  async function valueOf(remote) {
    if (remote.objectId) {
      await post('Runtime.callFunctionOn', { objectId: remote.objectId, functionDeclaration: 'function () { __gantryCapture(this); }' });
      const value = captured;
      captured = undefined;
      return value;
    }
    if ('unserializableValue' in remote) return vm.runInThisContext(remote.unserializableValue);
    return remote.value;
  }

  function userStack(error) {
    if (!(error instanceof Error) || !error.stack) return `Uncaught ${util.inspect(error)}`;
    return error.stack
      .split('\n')
      .filter((line) => !/node:inspector|\[eval\]|node:internal|__gantry/.test(line))
      .join('\n');
  }

  async function runCell(code) {
    const id = ++cellIds;
    calls = 0;
    globalThis.__gantryCode = code.replace(/\bimport\s*\(/g, '__gantryImport(');
    // A late answer of an abandoned cell must not end the next one.
    globalThis.__gantryDone = (error, result) => {
      if (current && current.id === id) current.finish(error ? { error } : { result });
    };
    const outcome = await new Promise((finish) => {
      current = { id, finish };
      try {
        vm.runInThisContext('__gantryEvaluate(__gantryCode, __gantryDone)', { breakOnSigint: true });
      } catch (error) {
        finish({ interrupted: true });
      }
    });
    current = null;
    try {
      if (outcome.interrupted) {
        writeFrame({ type: 'error', ename: 'Interrupted', evalue: 'SIGINT', traceback: 'Interrupted: the cell was stopped by SIGINT' });
      } else if (outcome.error) {
        writeFrame({ type: 'error', ename: 'InternalError', evalue: String(outcome.error), traceback: '' });
      } else if (outcome.result.exceptionDetails) {
        const thrown = outcome.result.exceptionDetails.exception;
        const error = thrown ? await valueOf(thrown) : outcome.result.exceptionDetails.text;
        writeFrame({ type: 'error', ename: (error && error.name) || 'Error', evalue: String(error && error.message), traceback: userStack(error) });
      } else {
        const value = await valueOf(outcome.result.result);
        if (value !== undefined) {
          globalThis._ = value;
          writeFrame({ type: 'result', data: bundle(value, true) });
        }
      }
    } catch (error) {
      writeFrame({ type: 'error', ename: 'InternalError', evalue: String(error), traceback: String(error && error.stack) });
    }
    let lexical = [];
    try {
      lexical = (await post('Runtime.globalLexicalScopeNames', {})).names;
    } catch (error) {
      lexical = [];
    }
    const names = lexical.concat(Object.getOwnPropertyNames(globalThis).filter((name) => !baseline.has(name) && name !== '_' && !name.startsWith('__gantry')));
    writeFrame({ type: 'done', names, modules: [] });
  }

  // As node's REPL: an error no one catches (a throwing timer, a promise
  // rejected with no handler) is said, and the kernel and its state stay.
  process.on('uncaughtException', (error) => {
    process.stderr.write(`Uncaught ${userStack(error)}\n`);
  });
  process.on('unhandledRejection', (reason) => {
    process.stderr.write(`Unhandled rejection: ${userStack(reason)}\n`);
  });

  process.on('SIGINT', () => {
    // A cell waiting on a promise (a timer, I/O): abandon it, keep the state.
    if (current) current.finish({ interrupted: true });
  });

  // Cells arrive one at a time (the host waits for `done`); results of
  // bridged calls arrive while a cell awaits them.
  const input = new net.Socket({ fd: inFd, readable: true, writable: false });
  let buffered = Buffer.alloc(0);
  let queue = Promise.resolve();
  input.on('data', (chunk) => {
    buffered = Buffer.concat([buffered, chunk]);
    while (buffered.length >= 4) {
      const length = buffered.readUInt32BE(0);
      if (buffered.length < 4 + length) break;
      const frame = JSON.parse(buffered.subarray(4, 4 + length).toString('utf8'));
      buffered = buffered.subarray(4 + length);
      if (frame.type === 'tool_result') {
        answered(frame);
      } else if (frame.type === 'exec') {
        queue = queue.then(() => {
          globalThis.__gantryCode = frame.code;
          globalThis.__gantryDone = (error, result) => {
            if (current) current.finish(error ? { error } : { result });
          };
          return runCell(frame.code);
        });
      }
    }
  });
  input.on('end', () => process.exit(0));
  input.on('error', () => process.exit(0));

  writeFrame({ type: 'hello', pid: process.pid, language: 'javascript', version: process.version });
  try {
    syncFd = fs.openSync('/proc/self/fd/1', 'w');
  } catch {
    // Without it, printed text and frames may come out of order; no more.
  }
})();
