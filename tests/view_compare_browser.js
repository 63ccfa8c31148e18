/*
 * view_compare_browser.js - the served page's labels, frame graph, plot strip and comparison of
 * two captures, in Debian's chromium through Playwright (playwright-core from `npm ci`). Run by
 * ctest (test_view_compare_browser):
 *
 *   node tests/view_compare_browser.js MPROF VIEW_DEMO SYNTH_CAPTURE OUT_DIR [ENGINE]
 *
 *   - labels: on a recursion 30 deep, every label of a zone that carries a fold marker starts
 *     after the marker, and a cut label keeps the start of its name;
 *   - frame graph (tests/synth_capture.c: time stamps chosen, so no check depends on the
 *     machine's load): 400 frames of 0.3 ms after a first one of 50 ms fill the graph (the median
 *     bar is at least a third of its height; none is under 2 px), the 16.7 ms budget is said to
 *     be above the scale, the long frames are cut with a red cap; frames of 15 to 18 ms draw the
 *     budget line; zooming the graph rescales it to its frames;
 *   - layout (the sample engine, 13 plots): the plot groups start folded, the timeline keeps most
 *     of the window, a group unfolds on a click and the strip never takes more than a third;
 *   - compare (synth_capture a and b: Physics::step four times slower in b, which also has
 *     Physics::solve): both frame-time distributions overlaid, the zone table pairs every zone and
 *     lists the one only in B, Physics::step's histograms of both sides, frames from..to and a
 *     section compared alone, the capture switch, and the address #compare&zone=NAME (the gate's
 *     link) opening on that zone.
 * Screenshots go to OUT_DIR (serve_labels.png, serve_framegraph_small.png,
 * serve_framegraph_budget.png, serve_plots_folded.png, serve_compare.png, serve_compare_zone.png).
 * Exit status: 0 passed, 1 failed, 77 skipped (no chromium or playwright-core; in CI they fail).
 */
'use strict';
const { spawn, execFileSync } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');

const [mprof, viewDemo, synth, outDir, engine] = process.argv.slice(2);
const { pw, browserPath, check, finish, waitFor } = require('./browser_harness');

function startServer(args) {
    return new Promise((resolve, reject) => {
        const p = spawn(mprof, ['view', '--serve', '--port', '0'].concat(args), { stdio: ['ignore', 'pipe', 'pipe'] });
        let out = '', err = '';
        p.stdout.on('data', (d) => {
            out += d;
            const m = /http:\/\/[^\s]+/.exec(out);
            if (m) resolve({ proc: p, url: m[0] });
        });
        p.stderr.on('data', (d) => { err += d; });
        p.on('exit', (code) => reject(new Error('server exited ' + code + ': ' + err)));
        setTimeout(() => reject(new Error('server did not start: ' + err)), 120000);
    });
}

async function main() {
    fs.mkdirSync(outDir, { recursive: true });
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'mprof-cmp-'));
    const cap = (name, args) => {
        const p = path.join(tmp, name + '.mprof');
        execFileSync(viewDemo, [p].concat(args), { stdio: 'ignore' });
        return p;
    };
    const synthCap = (mode) => {
        const p = path.join(tmp, 'synth_' + mode + '.mprof');
        execFileSync(synth, [p, mode], { stdio: 'ignore' });
        return p;
    };
    const deep = cap('deep', ['12', '20', 'deep=30']);
    const small = synthCap('small'), heavy = synthCap('budget'), a = synthCap('a'), b = synthCap('b');
    const profile = path.join(tmp, 'profile');
    fs.mkdirSync(profile);
    const browser = await pw.chromium.launchPersistentContext(profile, {
        executablePath: browserPath,
        headless: true,
        args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
               '--disable-background-networking', '--disable-component-update', '--disable-sync'],
        viewport: { width: 1600, height: 1000 },
    });
    const servers = [];
    try {
        const page = browser.pages()[0] || await browser.newPage();
        const st = (k) => page.$eval('#mprof-status', (e, key) => e.dataset[key], k);
        const settle = () => waitFor(page, () => {
            const d = document.getElementById('mprof-status').dataset;
            return d.state === 'ok' && d.loadedView && d.loadedView === d.view;
        }, null, { timeout: 120000 });
        const open = async (args, hash) => {
            const srv = await startServer(args);
            servers.push(srv);
            await page.goto(srv.url + (hash || ''));
            await waitFor(page, () => document.getElementById('mprof-status').dataset.state !== 'loading', null, { timeout: 120000 });
            check(await st('state') === 'ok', 'the page loads (' + (await st('error') || 'ok') + ')');
            await settle();
            return srv;
        };

        /* ---- labels beside the fold marker ---- */
        await open([deep, '--index', path.join(tmp, 'deep.vidx')]);
        /* Zoom to one frame: the recursion's zones are wide enough for markers and labels. */
        await page.click('#framegraph', { position: { x: 400, y: 60 } });
        await page.waitForTimeout(300);
        await settle();
        await page.waitForTimeout(300);
        const lab = await page.evaluate(() => {
            const S = window.MPROF_SERVE.state;
            let checked = 0, bad = [], cut = 0, badCut = [];
            for (const m of S.foldMarkers) {
                const l = S.labels.find((q) => q.track === m.track && q.depth === m.depth && q.s === m.s);
                if (!l) continue;
                checked++;
                if (l.x < m.x + 6) bad.push(l.text + ' at ' + l.x.toFixed(1) + ', marker ends ' + (m.x + 6).toFixed(1));
                if (l.text && l.text[0] !== l.name[0]) bad.push('"' + l.text + '" lost the start of ' + l.name);
            }
            for (const l of S.labels)
                if (l.text.endsWith('\u2026')) {
                    cut++;
                    const kept = l.text.slice(0, -1);
                    if (!(l.name + ' ').startsWith(kept) && !kept.startsWith(l.name)) badCut.push(l.text + ' of ' + l.name);
                }
            return { markers: S.foldMarkers.length, checked: checked, bad: bad, cut: cut, badCut: badCut };
        });
        check(lab.markers > 0 && lab.checked > 0, 'fold markers with labels: ' + lab.checked + ' of ' + lab.markers);
        check(lab.bad.length === 0, 'every label starts after its fold marker' + (lab.bad.length ? ': ' + lab.bad.slice(0, 3).join('; ') : ''));
        check(lab.badCut.length === 0, 'a cut label keeps the start of its name (' + lab.cut + ' cut)' + (lab.badCut.length ? ': ' + lab.badCut.slice(0, 3).join('; ') : ''));
        await page.screenshot({ path: path.join(outDir, 'serve_labels.png') });

        /* ---- the frame graph's scale ---- */
        await open([small, '--index', path.join(tmp, 'small.vidx')]);
        const fgH = await page.$eval('#framegraph', (e) => e.getBoundingClientRect().height);
        check(await st('fgBudget') === 'above', 'sub-millisecond frames: the budget is said to be above the scale (' + await st('fgBudget') + ')');
        check(+await st('fgTop') < 16666667 / 4, 'the scale follows the frames, not the budget (top ' + (+await st('fgTop') / 1e6).toFixed(2) + ' ms)');
        check(+await st('fgMedianBar') >= 0.33, 'the median frame fills ' + (100 * await st('fgMedianBar')).toFixed(0) + ' % of the graph');
        check(+await st('fgMinBar') >= 2, 'no frame is under 2 px (' + await st('fgMinBar') + ' of ' + fgH + ')');
        check(+await st('fgClipped') === 2, 'the first frame and the hitch are cut with a red cap (' + await st('fgClipped') + ')');
        await page.screenshot({ path: path.join(outDir, 'serve_framegraph_small.png'), clip: { x: 0, y: 0, width: 1600, height: 140 } });
        /* Zooming the graph rescales it to the frames it shows (the slow frame leaves the view). */
        const fgBox = await page.$eval('#framegraph', (e) => { const r = e.getBoundingClientRect(); return { x: r.left, y: r.top, w: r.width, h: r.height }; });
        await page.mouse.move(fgBox.x + fgBox.w * 0.1, fgBox.y + fgBox.h / 2);
        for (let i = 0; i < 6; i++) await page.mouse.wheel(0, -300);
        await waitFor(page, () => +document.getElementById('mprof-status').dataset.fgTo < 200, null, { timeout: 60000 });
        check(+await st('fgFrom') > 0 && +await st('fgTo') < 200, 'the wheel zooms the graph: frames ' + await st('fgFrom') + '..' + await st('fgTo'));
        check(+await st('fgClipped') === 0, 'without the long frames nothing is cut (' + await st('fgClipped') + ')');
        await page.dblclick('#framegraph', { position: { x: 300, y: 40 } });
        await open([heavy, '--index', path.join(tmp, 'heavy.vidx')]);
        check(await st('fgBudget') === 'drawn', 'frames near the budget: its line is drawn (top ' + (+await st('fgTop') / 1e6).toFixed(1) + ' ms)');
        await page.screenshot({ path: path.join(outDir, 'serve_framegraph_budget.png'), clip: { x: 0, y: 0, width: 1600, height: 140 } });

        /* ---- many plots: the tracks keep the room ---- */
        if (engine && fs.existsSync(engine)) {
            const ecap = path.join(tmp, 'engine.mprof');
            execFileSync(engine, ['--frames', '60', '--capture', ecap, '--quiet', '--renderer', 'cpu'], { stdio: 'ignore' });
            await open([ecap, '--index', path.join(tmp, 'engine.vidx')]);
            const groups = +await st('plotGroups'), folded = +await st('plotGroupsFolded');
            check(+await st('plots') > 4 && groups > 0 && folded === groups,
                await st('plots') + ' plots in ' + groups + ' groups, all folded at first');
            const tlH = +await st('timelineHeight'), plH = +await st('plotsHeight');
            check(tlH >= 450 && plH < tlH / 3, 'the timeline keeps the room: ' + tlH + ' px, plots ' + plH + ' px');
            await page.screenshot({ path: path.join(outDir, 'serve_plots_folded.png') });
            const mem = await page.evaluate(() => window.MPROF_SERVE.plotGroupRect('Memory') || window.MPROF_SERVE.plotGroupRect('Plots'));
            await page.mouse.click(mem.x, mem.y);
            await page.waitForTimeout(300);
            check(+await st('plotRows') > 0 && +await st('plotsHeight') <= 1000 * 0.33 + 1,
                'a group unfolds (' + await st('plotRows') + ' plots shown) within a third of the window (' + await st('plotsHeight') + ' px)');
            await page.screenshot({ path: path.join(outDir, 'serve_plots_open.png') });
        } else {
            console.log('skip: no sample engine given, the plot strip is checked on view_demo only');
        }

        /* ---- comparing two captures ---- */
        await open([a, b]);
        await waitFor(page, () => document.getElementById('mprof-status').dataset.compare === 'on', null, { timeout: 60000 });
        await page.click('#tabs button[data-tab="compare"]');
        const ready = () => waitFor(page, () => document.getElementById('mprof-status').dataset.cmpReady === '1', null, { timeout: 120000 });
        await ready();
        check(+await st('cmpFramesA') === 30 && +await st('cmpFramesB') === 30, 'both sides\' frames: ' + await st('cmpFramesA') + ', ' + await st('cmpFramesB'));
        check(+await st('cmpFrameBarsA') > 0 && +await st('cmpFrameBarsB') > 0, 'the frame-time distributions overlaid (' +
            await st('cmpFrameBarsA') + ' and ' + await st('cmpFrameBarsB') + ' bars)');
        check(+await st('cmpPaired') === 5 && +await st('cmpRows') === 6, 'every zone paired: ' + await st('cmpPaired') +
            ' of ' + await st('cmpRows') + ' rows (Physics::solve only in B)');
        /* Sorted by the change of time per frame (its size), as mprof diff sorts its impact: the
         * slower Physics::step, and the zones that hold it, come first. */
        const order = await page.$$eval('#cmp-zone-table tr[data-zone]', (rs) => rs.map((r) => r.dataset.zone));
        const top3 = order.slice(0, 3);
        check(top3.includes('Physics::step'), 'sorted by the change of time per frame: ' + top3.join(', ') + ' first');
        await page.screenshot({ path: path.join(outDir, 'serve_compare.png') });
        await page.click('#cmp-zone-table tr[data-zone="Physics::step"]');
        await waitFor(page, () => document.getElementById('mprof-status').dataset.cmpZone === 'Physics::step' &&
            +document.getElementById('mprof-status').dataset.cmpHistBarsB > 0, null, { timeout: 60000 });
        check(+await st('cmpZoneCountA') === 30 && +await st('cmpZoneCountB') === 30,
            'Physics::step in both: ' + await st('cmpZoneCountA') + ' and ' + await st('cmpZoneCountB') + ' zones, ' +
            await st('cmpHistBarsA') + ' and ' + await st('cmpHistBarsB') + ' bars');
        await page.screenshot({ path: path.join(outDir, 'serve_compare_zone.png') });
        /* Frames 5 to 15 alone. */
        await page.selectOption('#cmp-scope', 'frames');
        await page.fill('#cmp-from', '5');
        await page.fill('#cmp-to', '15');
        await page.click('#cmp-go');
        await ready();
        check(+await st('cmpFramesA') === 10 && +await st('cmpFramesB') === 10 && await st('cmpScope') === 'frames:5:15',
            'frames 5..15 compared alone (' + await st('cmpFramesA') + ', ' + await st('cmpFramesB') + ')');
        /* A section: the Physics frame set. */
        const setVal = await page.$$eval('#cmp-set option', (os) => (os.find((o) => o.textContent.startsWith('Physics')) || {}).value);
        await page.selectOption('#cmp-scope', 'section');
        await page.selectOption('#cmp-set', setVal);
        await page.click('#cmp-go');
        await ready();
        check(+await st('cmpFramesA') === 30 && +await st('cmpFramesB') === 30 && (await st('cmpScope')).startsWith('section'),
            'the Physics section compared alone (' + await st('cmpFramesA') + ' frames a side)');
        /* The capture switch: B's timeline. */
        const zonesA = await st('zones');
        await page.click('#cap-switch button[data-cap="B"]');
        await waitFor(page, () => document.getElementById('mprof-status').dataset.capShown === 'B', null, { timeout: 60000 });
        await settle();
        const docB = JSON.parse(execFileSync(mprof, ['view', '--json', '-o', '-', b], { maxBuffer: 1 << 28 }).toString());
        check(await st('zones') === String(docB.capture.zones) && await st('zones') !== zonesA,
            'the switch shows B (' + await st('zones') + ' zones, A had ' + zonesA + ')');
        /* The gate's link: the address opens the comparison on a zone. */
        await page.goto(servers[servers.length - 1].url + '#compare&zone=Physics::step');
        await waitFor(page, () => document.getElementById('mprof-status').dataset.cmpZone === 'Physics::step', null, { timeout: 120000 });
        check(await st('tab') === 'compare', '#compare&zone=Physics::step opens the comparison on the zone');
        check(+await st('errors') === 0, 'no script error (' + await st('errors') + ' ' + (await st('lastError') || '') + ')');
    } finally {
        await browser.close();
        for (const s of servers) s.proc.kill('SIGTERM');
    }
    finish();
}

main().catch((e) => { console.log('FAIL ' + (e.stack || e)); process.exit(1); });
