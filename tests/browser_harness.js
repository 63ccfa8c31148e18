/*
 * browser_harness.js - what every browser test of the served viewer needs (view_serve_browser.js,
 * view_serve_sys_browser.js): Playwright (npm playwright-core) with Debian's chromium, a skip that
 * fails instead in CI (CI=true or MPROF_REQUIRE_BROWSER=1), checks that count their failures, and
 * a waitForFunction that prints the page's #mprof-status when it times out.
 */
'use strict';
const fs = require('fs');
const path = require('path');

const required = process.env.CI === 'true' || process.env.MPROF_REQUIRE_BROWSER === '1';
const browserPath = process.env.MPROF_CHROMIUM || '/usr/bin/chromium';

/* Exits 77 (skipped), or 1 where a browser is required. */
function skip(why) {
    console.log((required ? 'FAIL: ' : 'SKIP: ') + why);
    process.exit(required ? 1 : 77);
}

let pw;
try {
    pw = require(path.join(__dirname, '..', 'node_modules', 'playwright-core'));
} catch (e) {
    skip('playwright-core is not installed: run `npm ci` at the root of the source tree');
}
if (!fs.existsSync(browserPath)) skip('no chromium at ' + browserPath + ' (install Debian\'s chromium)');

let failures = 0;
function check(ok, what) {
    console.log((ok ? 'ok   ' : 'FAIL ') + what);
    if (!ok) failures++;
}

/* Prints the verdict and exits: 0 when every check passed, else 1. */
function finish() {
    console.log(failures ? failures + ' check(s) failed' : 'all checks passed');
    process.exit(failures ? 1 : 0);
}

/* page.waitForFunction that prints the page's status when it times out. */
async function waitFor(page, fn, arg, opts) {
    try {
        return await page.waitForFunction(fn, arg, opts);
    } catch (e) {
        console.log('status: ' + JSON.stringify(await page.$eval('#mprof-status', (el) => Object.assign({}, el.dataset))));
        throw e;
    }
}

module.exports = { pw, browserPath, required, skip, check, finish, waitFor };
