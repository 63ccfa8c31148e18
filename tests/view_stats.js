/*
 * view_stats.js - the viewer's statistics table (src/view/page/js/stats.js) under node, without a
 * browser: direct and mutual recursion on two tracks count each stretch of time once in Total,
 * as `mprof report` does, while Count, Self and Mean cover every call.
 *
 * usage: node view_stats.js PAGE_JS_DIR   (exit 0 = pass; prints what failed)
 */
'use strict';
const fs = require('fs');
const path = require('path');
const vm = require('vm');

const dir = process.argv[2];
const ctx = { console: console, Math: Math, Map: Map, Float64Array: Float64Array };
vm.createContext(ctx);
for (const f of ['util.js', 'data.js', 'stats.js'])
    vm.runInContext(fs.readFileSync(path.join(dir, f), 'utf8') + '\nthis.U = typeof U === "undefined" ? this.U : U;' +
        'this.Data = typeof Data === "undefined" ? this.Data : Data;' +
        'this.Stats = typeof Stats === "undefined" ? this.Stats : Stats;', ctx, { filename: f });

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
/* A range that holds only the innermost Rec still finds its outer instances. */
const inner = new Map();
for (const r of ctx.Stats.compute(D, 45 * MS, 46 * MS)) inner.set(r.name, r);
expect('Rec total in [45, 46]', inner.get('Rec').total, 60 * MS);
if (failed) process.exit(1);
console.log('view_stats: ok');
