/*
 * view_serve_browser.js - `mprof view --serve` in a real browser, driven by Playwright
 * (npm playwright-core, package-lock.json at the root) in Debian's chromium; no browser is
 * downloaded. Run by ctest (test_view_serve_browser):
 *
 *   node tests/view_serve_browser.js MPROF VIEW_DEMO OUT_DIR LIVE_GAME
 *
 * It records a capture with view_demo, reads its zone count from the static page's document
 * (mprof view --json), starts the real server on a free loopback port, opens the page and checks, through the page's
 * #mprof-status element and what is drawn: load (zones of the whole capture), zoom with the wheel,
 * pan with a drag, click a zone, find zone (histogram, a bar's instances, jump to one), statistics
 * of a selected range, a collapsed track, a moved track. Then `mprof view --live` attached to
 * tests/live_game: the page's zone and frame counts grow while the game runs, and end at the
 * zones of the finished capture. Screenshots go to OUT_DIR.
 * Exit status: 0 passed, 1 failed, 77 skipped (no chromium or no playwright-core; in CI, CI=true,
 * or with MPROF_REQUIRE_BROWSER=1 those fail instead).
 */
'use strict';
const { spawn, execFileSync } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');

const [mprof, viewDemo, outDir, liveGame] = process.argv.slice(2);
const net = require('net');
let capture = null, zonesArg = null;
const { pw, browserPath, skip, check, finish, waitFor } = require('./browser_harness');

function freePort() {
    return new Promise((resolve) => {
        const s = net.createServer();
        s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)); });
    });
}

function startServer(indexPath, argv) {
    return new Promise((resolve, reject) => {
        const p = spawn(mprof, argv || ['view', '--serve', capture, '--port', '0', '--index', indexPath],
            { stdio: ['ignore', 'pipe', 'pipe'] });
        let out = '', err = '';
        p.stdout.on('data', (d) => {
            out += d;
            const m = /http:\/\/[^\s]+/.exec(out);
            if (m) resolve({ proc: p, url: m[0] });
        });
        p.stderr.on('data', (d) => { err += d; });
        p.on('exit', (code) => reject(new Error('server exited ' + code + ': ' + err)));
        setTimeout(() => reject(new Error('server did not start: ' + err)), 60000);
    });
}

async function main() {
    fs.mkdirSync(outDir, { recursive: true });
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'mprof-serve-'));
    capture = path.join(tmp, 'browser.mprof');
    execFileSync(viewDemo, [capture, '60', '40'], { stdio: 'ignore' });
    const doc = JSON.parse(execFileSync(mprof, ['view', '--json', '-o', '-', capture], { maxBuffer: 1 << 28 }).toString());
    zonesArg = String(doc.capture.zones);
    const srv = await startServer(path.join(tmp, 'capture.vidx'));
    const profile = path.join(tmp, 'profile');
    fs.mkdirSync(profile);
    const browser = await pw.chromium.launchPersistentContext(profile, {
        executablePath: browserPath,
        headless: true,
        args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
               '--disable-background-networking', '--disable-component-update', '--disable-sync'],
        viewport: { width: 1600, height: 1000 },
    });
    try {
        const page = browser.pages()[0] || await browser.newPage();
        const st = (k) => page.$eval('#mprof-status', (e, key) => e.dataset[key], k);
        const loadedSettles = async () => {
            await waitFor(page, () => {
                const d = document.getElementById('mprof-status').dataset;
                return d.state !== 'loading' && d.loadedView && d.loadedView === d.view;
            }, null, { timeout: 90000 }).catch(async (e) => {
                console.log('status: ' + JSON.stringify(await page.$eval('#mprof-status', (el) => Object.assign({}, el.dataset))));
                throw e;
            });
        };
        await page.goto(srv.url);
        await waitFor(page, () => document.getElementById('mprof-status').dataset.state !== 'loading',
            null, { timeout: 90000 });
        check(await st('state') === 'ok', 'the page loads (state ' + await st('state') + ' ' + (await st('error') || '') + ')');
        await loadedSettles();
        check(await st('zones') === zonesArg, 'data-zones is every zone of the capture (' + await st('zones') + ' = ' + zonesArg + ')');
        check(+await st('tracks') >= 4, 'tracks: ' + await st('trackNames'));
        check(+await st('frames') > 0, 'frames: ' + await st('frames'));
        check(+await st('plots') > 0, 'plots: ' + await st('plots'));
        const drawn0 = +await st('drawnZones'), merged0 = +await st('mergedZones');
        check(drawn0 + merged0 > 0, 'whole view: ' + drawn0 + ' zones drawn, ' + merged0 + ' merged');
        await page.screenshot({ path: path.join(outDir, 'serve_whole.png') });

        /* Frame images: hovering frame k of the frame graph shows its thumbnail (view_demo paints
         * frame k with red = 4 k). */
        const fgBox = await page.$eval('#framegraph', (e) => { const r = e.getBoundingClientRect(); return { x: r.left, y: r.top, w: r.width, h: r.height }; });
        const nFrames = +await st('frames');
        await page.mouse.move(fgBox.x + fgBox.w * (10.5 / nFrames), fgBox.y + fgBox.h - 5);
        await waitFor(page, () => document.getElementById('mprof-status').dataset.imageFrame, null, { timeout: 90000 });
        const imf = +await st('imageFrame');
        check(await st('imageSize') === '96x54' && +await st('imageRed') === (imf * 4) % 256,
            'hovering frame ' + imf + ' shows its image (' + await st('imageSize') + ', red ' + await st('imageRed') + ')');
        await page.screenshot({ path: path.join(outDir, 'serve_frame_image.png') });
        await page.mouse.move(5, 500);

        /* Zoom in with the wheel: the view narrows, the server answers the new view, fewer merged. */
        const box = await page.$eval('#timeline', (e) => { const r = e.getBoundingClientRect(); return { x: r.left, y: r.top, w: r.width, h: r.height }; });
        const span = (v) => { const [a, b] = v.split(':').map(Number); return b - a; };
        const v0 = await st('view');
        await page.mouse.move(box.x + box.w * 0.3, box.y + 100);
        for (let i = 0; i < 8; i++) await page.mouse.wheel(0, -400);
        await page.waitForTimeout(300);
        await loadedSettles();
        const v1 = await st('view');
        check(span(v1) < span(v0) / 4, 'wheel zooms in (' + v0 + ' -> ' + v1 + ')');
        check(+await st('mergedZones') < merged0 || merged0 === 0, 'zoomed: fewer merged zones (' + await st('mergedZones') + ' < ' + merged0 + ')');
        await page.screenshot({ path: path.join(outDir, 'serve_zoomed.png') });

        /* Pan: drag to the left moves the view later in time. */
        await page.mouse.move(box.x + box.w * 0.6, box.y + 60);
        await page.mouse.down();
        await page.mouse.move(box.x + box.w * 0.4, box.y + 60, { steps: 5 });
        await page.mouse.up();
        await page.waitForTimeout(200);
        await loadedSettles();
        const v2 = await st('view');
        check(+v2.split(':')[0] > +v1.split(':')[0], 'drag pans (' + v1 + ' -> ' + v2 + ')');

        /* Click a zone: it is selected and described. */
        /* From the first frame on: a slow start (sanitizers) may leave the capture's first
         * twentieth empty. */
        await page.evaluate(() => {
            const S = window.MPROF_SERVE.state, t = S.frames.f.length ? S.frames.f[1] : 0;
            window.MPROF_SERVE.setView(t, t + S.meta.capture.duration_ns / 20);
        });
        await page.waitForTimeout(200);
        await loadedSettles();
        const zr = await page.evaluate(() => window.MPROF_SERVE.zoneRect(null));
        check(!!zr, 'a zone is drawn to click');
        if (zr) {
            await page.mouse.click(zr.x, zr.y);
            await page.waitForTimeout(100);
            check(!!await st('selected'), 'clicking a zone selects it (' + await st('selected') + ')');
            const detail = await page.$eval('#zone-detail', (e) => e.textContent);
            check(detail.includes(await st('selected')), 'the details name it: ' + detail);
        }

        /* Find zone: histogram over the whole capture, a bar's instances, jump to one. */
        await page.click('button[data-tab=find]');
        await page.fill('#find-input', 'Physics::step');
        await page.press('#find-input', 'Enter');
        await waitFor(page, () => +document.getElementById('mprof-status').dataset.histBars > 0, null, { timeout: 90000 });
        check(+await st('histCount') > 0, 'find zone: ' + await st('histCount') + ' Physics::step zones in ' + await st('histBars') + ' bars');
        const bar = await page.evaluate(() => {
            const S = window.MPROF_SERVE.state, b = S.hist.buckets;
            let best = 0;
            for (let i = 0; i < b.length; i += 3) if (b[i + 2] > b[3 * best + 2]) best = i / 3;
            return window.MPROF_SERVE.histBarRect(best);
        });
        await page.mouse.click(bar.x, bar.y);
        await waitFor(page, () => +document.getElementById('mprof-status').dataset.instances > 0, null, { timeout: 90000 });
        check(+await st('instances') > 0, 'a bar lists ' + await st('instances') + ' instances');
        await page.screenshot({ path: path.join(outDir, 'serve_find_zone.png') });
        await page.click('#instances table tr.pick');
        await page.waitForTimeout(200);
        await loadedSettles();
        const jumped = +await st('jumped'), vj = (await st('view')).split(':').map(Number);
        check(jumped >= vj[0] && jumped <= vj[1], 'an instance row jumps to it (' + jumped + ' in ' + vj.join(':') + ')');
        check(await st('selected') === 'Physics::step', 'and selects it');

        /* Statistics of a selected range (shift+drag). */
        await page.evaluate(() => window.MPROF_SERVE.setView(0, window.MPROF_SERVE.state.meta.capture.duration_ns));
        await page.waitForTimeout(200);
        await loadedSettles();
        await page.keyboard.down('Shift');
        await page.mouse.move(box.x + box.w * 0.1, box.y + 50);
        await page.mouse.down();
        await page.mouse.move(box.x + box.w * 0.6, box.y + 50, { steps: 5 });
        await page.mouse.up();
        await page.keyboard.up('Shift');
        await waitFor(page, () => +document.getElementById('mprof-status').dataset.statsRows > 0, null, { timeout: 90000 });
        check(+await st('statsRows') > 0 && await st('tab') === 'stats', 'range statistics: ' + await st('statsRows') +
            ' rows over ' + await st('statsZones') + ' zones');
        await page.screenshot({ path: path.join(outDir, 'serve_stats.png') });

        /* Layout: a track collapses from its header; the arrows move it. */
        const names0 = await st('trackNames');
        await page.evaluate(() => { const S = window.MPROF_SERVE.state; S.collapsed[S.order[0]] = true; });
        await page.evaluate(() => window.MPROF_SERVE.setView(0, 1e6 + window.MPROF_SERVE.state.view.t1));
        await loadedSettles();
        const collapsedH = await page.evaluate(() => window.MPROF_SERVE.state.contentH);
        await page.evaluate(() => { const S = window.MPROF_SERVE.state; S.collapsed[S.order[0]] = false; });
        await page.evaluate(() => window.MPROF_SERVE.setView(0, window.MPROF_SERVE.state.view.t1 - 1e6));
        await loadedSettles();
        const openH = await page.evaluate(() => window.MPROF_SERVE.state.contentH);
        check(collapsedH < openH, 'a collapsed track takes less room (' + collapsedH + ' < ' + openH + ')');
        const hdr = await page.evaluate(() => {
            const S = window.MPROF_SERVE.state, r = document.getElementById('timeline').getBoundingClientRect();
            const row = S.rows.find((q) => q.track === S.order[0] && q.depth === -1);
            const ctx = document.getElementById('timeline').getContext('2d');
            ctx.font = '11px system-ui, sans-serif';
            const t = S.meta.tracks.find((q) => q.id === S.order[0]);
            const label = '\u25bc ' + t.name + '  (' + t.kind + ', ' + t.zones.toString().replace(/\B(?=(\d{3})+(?!\d))/g, ',') + ' zones, ' + t.depths + ' levels)   ';
            return { x: r.left + 6 + ctx.measureText(label).width + 18, y: r.top + row.y - S.scrollY + 9 };
        });
        await page.mouse.click(hdr.x, hdr.y);
        const names1 = await st('trackNames');
        check(names1 !== names0 && names1.split('|')[1] === names0.split('|')[0],
            'the down arrow moves the first track down (' + names1 + ')');
        check(+await st('errors') === 0, 'no script errors (' + await st('errors') + ' ' + await st('lastError') + ')');
        /* The server refuses what is not the page or a query. */
        const bad = await page.evaluate(async () => {
            const a = await fetch('/../../etc/passwd');
            const b = await fetch('/api/zones?t0=0&t1=10&w=5&file=/etc/passwd');
            return [a.status, b.status];
        });
        check(bad[0] === 404 && bad[1] === 400, 'paths outside the page are refused (' + bad.join(',') + ')');
        await asyncSession(browser, tmp);
        if (liveGame) await processesSession(browser, tmp);
        if (liveGame) await liveSession(browser, tmp);
    } finally {
        await browser.close();
        srv.proc.kill('SIGTERM');
        fs.rmSync(tmp, { recursive: true, force: true });
    }
    finish();
}

/* Async spans (view_demo's "async" mode): the served page has a track per async track name, its
 * statistics of the whole capture give each track the report's count, find zone finds a span by
 * its name, and a clicked span names the threads it began and ended on; the static page shows the
 * same tracks and spans. */
async function asyncSession(browser, tmp) {
    const cap = path.join(tmp, 'async.mprof');
    execFileSync(viewDemo, [cap, '30', '10', 'async'], { stdio: 'ignore' });
    const rep = JSON.parse(execFileSync(mprof, ['report', '--json', cap], { maxBuffer: 1 << 28 }).toString());
    const want = rep.async.map((t) => t.track + ':' + t.count).sort().join('|');
    const spans = rep.async.reduce((n, t) => n + t.count + t.open_at_end, 0);
    const srv = await startServer(null, ['view', '--serve', cap, '--port', '0', '--index', path.join(tmp, 'async.vidx')]);
    try {
        const page = await browser.newPage();
        await page.setViewportSize({ width: 1600, height: 1000 });
        const st = (k) => page.$eval('#mprof-status', (e, key) => e.dataset[key], k);
        await page.goto(srv.url);
        await waitFor(page, () => document.getElementById('mprof-status').dataset.state === 'ok', null, { timeout: 90000 });
        check((await st('trackKinds')).includes('async:2'), 'async: two async tracks (' + await st('trackKinds') + ')');
        /* Statistics of the whole capture: a row per async track with the report's count. */
        await page.click('button[data-tab=stats]');
        await page.click('text=Whole capture');
        const got = await waitFor(page, () => {
            const d = document.getElementById('mprof-status').dataset;
            return d.statsWhole === '1' && d.statsAsync ? d.statsAsync.split('|').sort().join('|') : false;
        }, null, { timeout: 90000 }).then((h) => h.jsonValue());
        check(got === want, 'async: the statistics rows per track are the report\'s (' + got + ' = ' + want + ')');
        await page.screenshot({ path: path.join(outDir, 'serve_async_stats.png') });
        /* Find zone: a span by its name. */
        await page.click('button[data-tab=find]');
        await page.fill('#find-input', 'texture');
        await page.press('#find-input', 'Enter');
        await waitFor(page, () => +document.getElementById('mprof-status').dataset.histBars > 0, null, { timeout: 90000 });
        check(+await st('histCount') === 30, 'async: find zone finds the 30 "texture" spans (' + await st('histCount') + ')');
        /* The async tracks first, and the longest "texture" span (find zone's instances) in the
         * middle third of the view, so that it is drawn wide whatever the machine's timing made
         * of the spans: click it. */
        await page.evaluate(async () => {
            const S = window.MPROF_SERVE.state;
            const a = S.order.filter((id) => S.meta.tracks.find((t) => t.id === id).kind === 'async');
            S.order = a.concat(S.order.filter((id) => !a.includes(id)));
            const r = await fetch('/api/instances?loc=' + S.histLoc + '&limit=1').then((x) => x.json());
            const s0 = r.i[0], s1 = r.i[1], d = Math.max(s1 - s0, 1000);
            window.MPROF_SERVE.setView(s0 - d, s1 + d);
        });
        await waitFor(page, () => {
            const d = document.getElementById('mprof-status').dataset;
            return d.loadedView && d.loadedView === d.view;
        }, null, { timeout: 90000 });
        const zr = await page.evaluate(() => window.MPROF_SERVE.zoneRect('texture'));
        check(!!zr, 'async: a texture span is drawn');
        if (zr) {
            await page.mouse.click(zr.x, zr.y);
            await page.waitForTimeout(100);
            const detail = await page.$eval('#zone-detail', (e) => e.textContent);
            check(/begun on Main, ended on Worker/.test(detail), 'async: a span names its threads: ' + detail);
        }
        await page.screenshot({ path: path.join(outDir, 'serve_async.png') });
        check(+await st('errors') === 0, 'async: no script errors (' + await st('errors') + ' ' + await st('lastError') + ')');
        /* The static page of the same capture. */
        const html = path.join(tmp, 'async.html');
        execFileSync(mprof, ['view', '-o', html, cap]);
        await page.goto('file://' + html);
        await waitFor(page, () => document.getElementById('mprof-status').dataset.state !== undefined &&
            document.getElementById('mprof-status').dataset.state !== 'loading', null, { timeout: 90000 });
        check(await st('state') === 'ok' && +await st('asyncTracks') === 2 && +await st('asyncSpans') === spans,
            'async: the static page shows ' + await st('asyncTracks') + ' async tracks, ' + await st('asyncSpans') + ' spans (' + spans + ')');
        await page.screenshot({ path: path.join(outDir, 'static_async.png') });
        await page.close();
    } finally {
        srv.proc.kill('SIGTERM');
    }
}

/* A capture of two processes (two live_games merged): both pages show a header row per process,
 * "NAME (pid N)", over its thread tracks; a header collapses its process's tracks; find zone and
 * the statistics name a zone's process. */
async function processesSession(browser, tmp) {
    const parts = [path.join(tmp, 'p1.mprof'), path.join(tmp, 'p2.mprof')];
    for (const p of parts) execFileSync(liveGame, ['--frames', '30', '--capture', p], { stdio: 'ignore' });
    const cap = path.join(tmp, 'two.mprof');
    execFileSync(mprof, ['merge', parts[0], parts[1], '-o', cap, '--name', parts[1] + '=second'], { stdio: 'ignore' });
    const rep = JSON.parse(execFileSync(mprof, ['report', '--json', cap], { maxBuffer: 1 << 28 }).toString());
    const want = rep.processes.map((p) => p.name + ' (pid ' + p.pid + ')').join('|');
    const srv = await startServer(null, ['view', '--serve', cap, '--port', '0', '--index', path.join(tmp, 'two.vidx')]);
    try {
        const page = await browser.newPage();
        await page.setViewportSize({ width: 1600, height: 1000 });
        const st = (k) => page.$eval('#mprof-status', (e, key) => e.dataset[key], k);
        await page.goto(srv.url);
        await waitFor(page, () => document.getElementById('mprof-status').dataset.state === 'ok' &&
            document.getElementById('mprof-status').dataset.processHeaders !== undefined, null, { timeout: 90000 });
        check(await st('processHeaders') === want, 'processes: the served page\'s header rows (' + await st('processHeaders') + ' = ' + want + ')');
        /* Clicking the first header collapses its process's tracks. */
        const before = await page.evaluate(() => window.MPROF_SERVE.state.rows.length);
        const hdr = await page.evaluate(() => {
            const S = window.MPROF_SERVE.state, r = document.getElementById('timeline').getBoundingClientRect();
            const row = S.rows.find((q) => q.depth === -3);
            return { x: r.left + 40, y: r.top + row.y - S.scrollY + 9 };
        });
        await page.mouse.click(hdr.x, hdr.y);
        const after = await page.evaluate(() => window.MPROF_SERVE.state.rows.length);
        check(after < before, 'processes: a header row collapses its process (' + before + ' rows, then ' + after + ')');
        await page.screenshot({ path: path.join(outDir, 'serve_processes.png') });
        /* Find zone names the process of the zone it found. */
        await page.click('button[data-tab=find]');
        await page.fill('#find-input', 'update');
        await page.press('#find-input', 'Enter');
        await waitFor(page, () => +document.getElementById('mprof-status').dataset.histBars > 0, null, { timeout: 90000 });
        const info = await page.$eval('#find-info', (e) => e.textContent);
        check(/^update \((live_game|second), pid \d+\)/.test(info), 'processes: find zone names the process: ' + info);
        check(+await st('errors') === 0, 'processes: no script errors (' + await st('errors') + ' ' + await st('lastError') + ')');
        /* The static page of the same capture. */
        const html = path.join(tmp, 'two.html');
        execFileSync(mprof, ['view', '-o', html, cap]);
        await page.goto('file://' + html);
        await waitFor(page, () => document.getElementById('mprof-status').dataset.state !== undefined &&
            document.getElementById('mprof-status').dataset.state !== 'loading', null, { timeout: 90000 });
        check(await st('state') === 'ok' && await st('processHeaders') === want,
            'processes: the static page\'s header rows (' + await st('processHeaders') + ' = ' + want + ')');
        await page.screenshot({ path: path.join(outDir, 'static_processes.png') });
        await page.close();
    } finally {
        srv.proc.kill('SIGTERM');
    }
}

/* mprof view --live on a running game: the page grows, then shows the finished capture. */
async function liveSession(browser, tmp) {
    const port = await freePort();
    const game = spawn(liveGame, ['--frames', '700', '--frame-ms', '8'],
        { stdio: 'ignore', env: Object.assign({}, process.env, { MPROF_LISTEN: '1', MPROF_PORT: String(port) }) });
    const livePath = path.join(tmp, 'live.mprof');
    let srv = null;
    try {
        srv = await startServer(null, ['view', '--live', '-o', livePath, '-p', String(port), '--port', '0']);
        const page = await browser.newPage();
        const st = (k) => page.$eval('#mprof-status', (e, key) => e.dataset[key], k);
        await page.goto(srv.url);
        await waitFor(page, () => document.getElementById('mprof-status').dataset.state === 'ok', null, { timeout: 120000 });
        await waitFor(page, () => document.getElementById('mprof-status').dataset.live, null, { timeout: 90000 });
        const z1 = +await st('zones'), f1 = +await st('frames');
        await waitFor(page, (z) => +document.getElementById('mprof-status').dataset.zones > z, z1, { timeout: 90000 });
        const z2 = +await st('zones'), f2 = +await st('frames');
        const v = (await st('view')).split(':').map(Number);
        check(z2 > z1 && f2 >= f1, 'live: the page grows while the game runs (zones ' + z1 + ' -> ' + z2 + ', frames ' + f1 + ' -> ' + f2 + ')');
        await page.screenshot({ path: path.join(outDir, 'serve_live.png') });
        /* When mprof capture ends, the server serves the index of the finished file before it
         * says "ended"; the page then shows that index and its last view query settles. */
        await waitFor(page, () => document.getElementById('mprof-status').dataset.live === 'ended', null, { timeout: 120000 });
        await waitFor(page, () => {
            const d = document.getElementById('mprof-status').dataset;
            return d.loadedView === d.view;
        }, null, { timeout: 90000 });
        const v2 = (await st('view')).split(':').map(Number);
        const doc = JSON.parse(execFileSync(mprof, ['view', '--json', '-o', '-', livePath], { maxBuffer: 1 << 28 }).toString());
        /* (Under load the capture may have ended by the time v was read: the end is what counts.) */
        check(v2[1] >= v[1] && v2[1] >= doc.capture.duration_ns, 'live: the view follows the end of the capture (' +
            v.join(':') + ' -> ' + v2.join(':') + ', the capture ends at ' + doc.capture.duration_ns + ')');
        check(+await st('zones') === doc.capture.zones, 'live: at the end the page shows every zone of the capture (' +
            await st('zones') + ' = ' + doc.capture.zones + ')');
        check(+await st('frames') === doc.frames.start.length, 'live: and every frame (' + await st('frames') + ' = ' +
            doc.frames.start.length + ')');
        check(+await st('errors') === 0, 'live: no script errors (' + await st('errors') + ' ' + await st('lastError') + ')');
        await page.screenshot({ path: path.join(outDir, 'serve_live_end.png') });
        await page.close();
    } finally {
        if (srv) srv.proc.kill('SIGTERM');
        game.kill('SIGTERM');
    }
}

main().catch((e) => { console.log('FAIL: ' + (e.stack || e)); process.exit(1); });
