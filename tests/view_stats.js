/*
 * view_stats.js - the static page's statistics table (src/view/page/js/stats.js) under node,
 * without a browser: the figures of `mprof report` (analysis/site_stats.h), restated in the page
 * for ranges, must be the report's.
 *   - on hand-made tracks: direct and mutual recursion on two tracks count each stretch of time
 *     once in Total, while Count, Self and Mean cover every call; a range holds the zones that
 *     start and end in it, and an instance whose outer instances lie outside the range counts;
 *   - on real captures (view_demo with a recursion 20 deep, MPROF and VIEW_DEMO given): the page's
 *     figures of the whole range equal the document's zone_stats, which the C code computed,
 *     figure for figure (count, total, self, min, max, p50, p95, time in frames).
 *
 * usage: node view_stats.js PAGE_JS_DIR [MPROF VIEW_DEMO]   (exit 0 = pass; prints what failed)
 */
'use strict';
const fs = require('fs');
const path = require('path');
const vm = require('vm');

const dir = process.argv[2];
const ctx = { console: console, Math: Math, Map: Map, Float64Array: Float64Array };
vm.createContext(ctx);
for (const f of ['util.js', 'system.js', 'data.js', 'stats.js'])
    vm.runInContext(fs.readFileSync(path.join(dir, f), 'utf8') + '\nthis.U = typeof U === "undefined" ? this.U : U;' +
        'this.Data = typeof Data === "undefined" ? this.Data : Data;' +
        'this.Stats = typeof Stats === "undefined" ? this.Stats : Stats;' +
        'this.SystemView = typeof SystemView === "undefined" ? this.SystemView : SystemView;', ctx, { filename: f });

/* Zones as [start, end, depth, loc], in start order (parents first), ns. */
function track(name, zones) {
    let last = 0;
    const z = { start: [], dur: [], depth: [], loc: [] };
    for (const [s, e, d, l] of zones) {
        z.start.push(s - last);
        last = s;
        z.dur.push(e - s);
        z.depth.push(d);
        z.loc.push(l);
    }
    return ctx.Data.decodeTrack({ name: name, kind: 'thread', zones: z }, 0);
}

const MS = 1e6;
const srclocs = [];
for (const [i, n] of [[1, 'Outer'], [2, 'Rec'], [3, 'A'], [4, 'B']])
    srclocs[i] = { name: n, file: 'x.c', line: i, func: n.toLowerCase(), rgb: 0 };
const D = {
    srclocs: srclocs,
    tracks: [
        /* Outer [20, 80) > Rec [20, 80) > Rec [30, 70) > Rec [40, 60) */
        track('Main', [[20 * MS, 80 * MS, 0, 1], [20 * MS, 80 * MS, 1, 2], [30 * MS, 70 * MS, 2, 2],
            [40 * MS, 60 * MS, 3, 2]]),
        /* A [20, 80) > B [25, 75) > A [30, 70) > B [35, 65) */
        track('Worker', [[20 * MS, 80 * MS, 0, 3], [25 * MS, 75 * MS, 1, 4], [30 * MS, 70 * MS, 2, 3],
            [35 * MS, 65 * MS, 3, 4]])
    ]
};

const rows = new Map();
for (const r of ctx.Stats.compute(D, 0, 100 * MS)) rows.set(r.name, r);
let failed = 0;
function expect(what, got, want) {
    if (Math.abs(got - want) > 1e-6) {
        console.log('FAIL ' + what + ': ' + got + ', expected ' + want);
        failed++;
    }
}
expect('Rec count', rows.get('Rec').count, 3);
expect('Rec total', rows.get('Rec').total, 60 * MS);
expect('Rec self', rows.get('Rec').self, 60 * MS);
expect('Rec mean', rows.get('Rec').mean, 40 * MS);
expect('Outer total', rows.get('Outer').total, 60 * MS);
expect('A total', rows.get('A').total, 60 * MS);
expect('B total', rows.get('B').total, 50 * MS);
expect('B self', rows.get('B').self, 40 * MS);
expect('A count', rows.get('A').count, 2);
/* A range holds the zones that start and end in it; an instance whose outer instances lie outside
 * the range counts whole, one that an instance inside the range holds adds nothing. */
const range = (a, b) => { const m = new Map(); for (const r of ctx.Stats.compute(D, a * MS, b * MS)) m.set(r.name, r); return m; };
let r1 = range(35, 65);
expect('Rec count in [35, 65]', r1.get('Rec').count, 1);
expect('Rec total in [35, 65]', r1.get('Rec').total, 20 * MS);
expect('B total in [35, 65]', r1.get('B').total, 30 * MS);
expect('A in [35, 65]', r1.has('A') ? 1 : 0, 0);
r1 = range(25, 75);
expect('Rec count in [25, 75]', r1.get('Rec').count, 2);
expect('Rec total in [25, 75]', r1.get('Rec').total, 40 * MS);
expect('B count in [25, 75]', r1.get('B').count, 2);
expect('B total in [25, 75]', r1.get('B').total, 50 * MS);
expect('A total in [25, 75]', r1.get('A').total, 40 * MS);
expect('nothing in [45, 46]', range(45, 46).size, 0);

/* Real captures: the page's figures of the whole range are the C code's. */
const [mprof, viewDemo] = process.argv.slice(3);
if (mprof && viewDemo) {
    const { execFileSync } = require('child_process');
    const os = require('os');
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'mprof-view-stats-'));
    for (const args of [['30', '20', 'deep=20'], ['20', '200']]) {
        const cap = path.join(tmp, 'c.mprof');
        execFileSync(viewDemo, [cap].concat(args), { stdio: 'ignore' });
        const raw = JSON.parse(execFileSync(mprof, ['view', '--json', '-o', '-', cap], { maxBuffer: 1 << 28 }).toString());
        const RD = ctx.Data.load(raw);
        const page = ctx.Stats.compute(RD, RD.start - 1, RD.end + 1), doc = ctx.Stats.whole(RD);
        const key = (r) => (r.gpu ? 'g' : 'c') + r.loc;
        const byKey = new Map(page.map((r) => [key(r), r]));
        expect(args.join(' ') + ': rows', page.length, doc.length);
        let checked = 0;
        for (const w of doc) {
            const p = byKey.get(key(w));
            if (!p) { console.log('FAIL ' + args.join(' ') + ': ' + w.name + ' is not in the page\'s figures'); failed++; continue; }
            for (const k of ['count', 'total', 'self', 'min', 'max', 'p50', 'p95', 'inFrames'])
                expect(args.join(' ') + ': ' + w.name + ' ' + k, p[k], w[k]);
            if (Math.abs(p.mean - w.mean) > 1) expect(args.join(' ') + ': ' + w.name + ' mean', p.mean, w.mean);
            checked++;
        }
        expect(args.join(' ') + ': recursion checked', checked > 5 && doc.some((r) => r.name === 'Recurse' && r.count > 20) === (args[2] === 'deep=20') ? 1 : 0, 1);
    }
    fs.rmSync(tmp, { recursive: true, force: true });
}
if (failed) process.exit(1);
console.log('view_stats: ok');
