// Drives the page of `gantry view` in Chromium through playwright-core, for
// tests/e2e/test_view.py.
//
//   node drive.mjs --url URL#token=... --run RUN_ID --screenshot PATH
//                  --tools write_file,edit,eval --new-tool read_file
//
// The conversation with the test, one line each way:
//   1. opens the page, selects run RUN_ID, waits until its timeline shows a
//      call of each of --tools, then prints "ready" on stdout;
//   2. waits for "go" on stdin (the test has made one more call, a
//      --new-tool call, in the same run);
//   3. waits (for the DOM change, at most 15 s) until one more --new-tool
//      call shows, finished, without a reload; checks a visible diff with a
//      "+" line and a visible result image that decoded (naturalWidth > 0);
//      opens each section (Running now, Refused, Workers, Files); takes a
//      full-page screenshot to PATH; prints one JSON line (the summary) and
//      exits 0.
// Any failure: "drive.mjs: <why>" on stderr, a screenshot to PATH if the page
// got that far, exit 1. A console error or an uncaught exception on the page
// is a failure.
//
// playwright-core comes from $GANTRY_BROWSER_DIR/node_modules (installed by
// scripts/install-browser.sh); the browser is Debian's /usr/bin/chromium
// (Playwright's own browser downloads are never used).

import { createRequire } from 'node:module';
import path from 'node:path';
import readline from 'node:readline';

const STEP_MS = 15000;     // each wait on the page
const GO_MS = 120000;      // the test's one more call
const WHOLE_MS = 240000;   // everything

function fail(message) {
  process.stderr.write(`drive.mjs: ${message}\n`);
  process.exit(1);
}

function options(argv) {
  const out = {};
  for (let i = 0; i < argv.length; i += 2) {
    if (!argv[i].startsWith('--') || argv[i + 1] === undefined) fail(`bad arguments: ${argv.join(' ')}`);
    out[argv[i].slice(2)] = argv[i + 1];
  }
  for (const key of ['url', 'run', 'screenshot', 'new-tool']) if (!out[key]) fail(`--${key} is required`);
  out.tools = (out.tools ?? '').split(',').filter(Boolean);
  return out;
}

function loadPlaywright() {
  const dir = process.env.GANTRY_BROWSER_DIR;
  if (!dir) fail('GANTRY_BROWSER_DIR is not set: run scripts/install-browser.sh and set it to the directory it prints');
  try {
    return createRequire(path.join(dir, 'package.json'))('playwright-core');
  } catch (error) {
    fail(`cannot load playwright-core from ${dir}: ${error.message} (run scripts/install-browser.sh)`);
  }
}

// The next line "go" on stdin, or a failure after `ms`.
function waitForGo(ms) {
  const lines = readline.createInterface({ input: process.stdin });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no "go" on stdin within ${ms / 1000} s`)), ms);
    lines.on('line', (line) => {
      if (line.trim() !== 'go') return;
      clearTimeout(timer);
      resolve(); // before close(), whose 'close' event would reject
      lines.close();
      process.stdin.destroy(); // else the open pipe keeps node running
    });
    lines.on('close', () => reject(new Error('stdin closed before "go"')));
  });
}

// Each step names itself, so a timeout says what was awaited.
async function step(what, promise) {
  try {
    return await promise;
  } catch (error) {
    throw new Error(`${what}: ${error.message.split('\n')[0]}`);
  }
}

// Runs in the page: settles once more than `count` elements match `selector`
// and the last one is no longer running, watching DOM changes (a
// MutationObserver), not polling; rejects after `ms`.
function untilDom([selector, count, ms]) {
  const done = () => {
    const calls = document.querySelectorAll(selector);
    return calls.length > count && !calls[calls.length - 1].querySelector('.outcome.run');
  };
  return new Promise((resolve, reject) => {
    if (done()) return resolve();
    const observer = new MutationObserver(() => {
      if (!done()) return;
      observer.disconnect();
      clearTimeout(timer);
      resolve();
    });
    observer.observe(document.body, { childList: true, subtree: true, characterData: true });
    const timer = setTimeout(() => {
      observer.disconnect();
      reject(new Error(`not within ${ms / 1000} s`));
    }, ms);
  });
}

const callsOf = (tool) => `[data-testid="call"][data-tool="${tool}"]`;

async function main() {
  const opts = options(process.argv.slice(2));
  const { chromium } = loadPlaywright();
  setTimeout(() => fail(`not done within ${WHOLE_MS / 1000} s`), WHOLE_MS).unref();

  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const problems = [];
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console error: ${message.text()}`);
  });
  page.on('pageerror', (error) => problems.push(`uncaught on the page: ${error.message}`));
  let loads = 0;
  page.on('load', () => { loads += 1; });

  let failure = null;
  try {
    await step('opening the page', page.goto(opts.url, { waitUntil: 'load', timeout: STEP_MS }));
    const item = page.locator(`[data-testid="run-item"][data-run-id="${opts.run}"]`);
    await step(`waiting for run ${opts.run} in the list`, item.waitFor({ timeout: STEP_MS }));
    await item.locator('button').click();
    for (const tool of opts.tools) {
      await step(`waiting for a ${tool} call in the timeline`,
        page.locator(callsOf(tool)).first().waitFor({ timeout: STEP_MS }));
    }
    const before = await page.locator(callsOf(opts['new-tool'])).count();
    // A reload would drop this mark.
    await page.evaluate(() => { window.driveMark = 'kept'; });
    process.stdout.write('ready\n');

    await waitForGo(GO_MS);
    await step(`waiting for a new ${opts['new-tool']} call to show, finished (live)`,
      page.evaluate(untilDom, [callsOf(opts['new-tool']), before, STEP_MS]));
    if (loads !== 1 || (await page.evaluate(() => window.driveMark)) !== 'kept') {
      throw new Error('the page reloaded to show the new call');
    }
    const newCall = page.locator(callsOf(opts['new-tool'])).last();
    const outcome = (await newCall.locator('summary .outcome').textContent()).trim();

    const addLine = page.locator('[data-testid="diff"] .dl.add').filter({ visible: true }).first();
    await step('waiting for a visible diff with a "+" line', addLine.waitFor({ timeout: STEP_MS }));
    const addText = await addLine.textContent();
    if (!addText.startsWith('+')) throw new Error(`a diff "add" line does not start with "+": ${addText}`);

    await step('waiting for a visible result image', page.locator('[data-testid="result-image"]')
      .filter({ visible: true }).first().waitFor({ timeout: STEP_MS }));
    // decode() settles when the image has loaded and decoded: an event, not a poll.
    const widths = await step('decoding the result images', page.evaluate(async () => {
      const images = [...document.querySelectorAll('[data-testid="result-image"]')].filter((img) => img.checkVisibility());
      await Promise.all(images.map((img) => img.decode()));
      return images.map((img) => img.naturalWidth);
    }));
    if (!widths.length || widths.some((width) => !(width > 0))) throw new Error(`result images did not decode: ${widths}`);

    const sections = {};
    for (const [tab, testid] of [['running', 'running-now'], ['refused', 'refused'], ['workers', 'workers'], ['files', 'files']]) {
      await page.locator(`[data-testid="tab-${tab}"]`).click();
      const section = page.locator(`[data-testid="${testid}"]`);
      await step(`opening the ${testid} section`, section.waitFor({ state: 'visible', timeout: STEP_MS }));
      sections[testid] = (await section.innerText()).slice(0, 200);
    }
    const filesDiffs = await page.locator('[data-testid="files"] [data-testid="diff"]').count();
    await page.locator('[data-testid="tab-timeline"]').click();

    const tools = await page.locator('[data-testid="call"]').evaluateAll((calls) => calls.map((c) => c.dataset.tool));
    const runState = (await item.locator('.state').textContent()).trim();
    await page.screenshot({ path: opts.screenshot, fullPage: true });
    // Markup a run logged (a file named like an <img> tag) must stay text.
    const injected = await page.evaluate(() => document.title === 'pwned' || document.querySelector('img[src="x"]') !== null);
    if (injected) problems.push('markup from a log record was parsed as HTML');
    if (problems.length) throw new Error(problems.join('; '));
    process.stdout.write(`${JSON.stringify({
      ok: true, run: opts.run, state: runState, tools, newTool: opts['new-tool'], newOutcome: outcome,
      images: widths, filesDiffs, sections,
    })}\n`);
  } catch (error) {
    await page.screenshot({ path: opts.screenshot, fullPage: true }).catch(() => {});
    const seen = problems.length ? ` (also: ${problems.join('; ')})` : '';
    failure = `${error.message}${seen}`;
  } finally {
    await browser.close().catch(() => {});
  }
  if (failure) fail(failure);
  process.exit(0);
}

main().catch((error) => fail(error.stack ?? String(error)));
