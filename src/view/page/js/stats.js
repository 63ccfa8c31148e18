/*
 * stats.js - zone statistics of a time range: one row per source location with count, total,
 * self, mean, median, p95, min and max, sortable by any column. Clicking a row highlights that
 * zone in the timeline; the range is the selection (or the clicked frame, or the whole range).
 *
 * The figures are those of `mprof report`, defined once in analysis/site_stats.h: for the whole
 * capture the page shows the document's zone_stats, computed by that code over every zone
 * (embedded or not); for a range it computes them here by the same rules, which this file
 * restates (tests/view_stats.js checks that both agree on real captures):
 *   - the zones of a range are those that start and end inside it; CPU zones (threads and
 *     fibers) that ended; GPU zones have rows of their own; lock spans are not zones;
 *   - total counts recursion once: a zone adds its duration unless an ancestor of its source
 *     location is inside the range too;
 *   - percentiles come from the log-linear histogram of analysis/hist.c (Stats.hist* below,
 *     the same buckets), so they equal the report's.
 * Async tracks have a row each (the report's async[]), and each span name of a track a row: their
 * spans inside the range that ended.
 */
'use strict';

const Stats = {};

/* analysis/hist.c, restated: values below 64 have their own bucket; above, each power of two is
 * split in 32; a percentile is the middle of the bucket that holds its rank, within min..max. */
Stats.HIST_SUB = 32;
Stats.histBucket = function (v) {
    if (v < 64) return Math.max(0, Math.floor(v));
    let e = 6;
    while (Math.pow(2, e + 1) <= v) e++;
    const sub = Math.floor(v / Math.pow(2, e - 5)) & (Stats.HIST_SUB - 1);
    return 64 + (e - 6) * Stats.HIST_SUB + sub;
};
Stats.histValue = function (b) {
    if (b < 64) return b;
    const e = Math.floor((b - 64) / Stats.HIST_SUB) + 6, sub = (b - 64) % Stats.HIST_SUB;
    const lo = Math.pow(2, e) + sub * Math.pow(2, e - 5);
    return lo + Math.floor(Math.pow(2, e - 5) / 2);
};
Stats.histQuantile = function (h, n, min, max, q) {
    if (!n) return 0;
    if (q <= 0) return min;
    if (q >= 1) return max;
    const rank = Math.max(1, Math.ceil(q * n));
    const keys = Array.from(h.keys()).sort((a, b) => a - b);
    let seen = 0;
    for (const b of keys) {
        seen += h.get(b);
        if (seen >= rank) return Math.min(max, Math.max(min, Stats.histValue(b)));
    }
    return max;
};

/* Whether zone i of track t has an ancestor of its source location inside [t0, t1]. Ancestors
 * hold each other: once one is outside the range, so are the rest. */
Stats.nestedInside = function (t, i, t0, t1) {
    const loc = t.loc[i];
    for (let p = t.parent[i]; p >= 0; p = t.parent[p]) {
        if (!(t.start[p] >= t0 && t.start[p] < t1 && t.end[p] <= t1)) return false;
        if (t.loc[p] === loc) return true;
    }
    return false;
};

Stats.row = function (D, loc, gpu, f) {
    const sl = D.srclocs[loc];
    return {
        loc: loc, name: sl.name + (gpu ? ' (GPU)' : '') + (Data.processName(D, sl.process) ? ' (' + Data.processName(D, sl.process) + ')' : ''), where: (sl.file ? sl.file + ':' + sl.line : ''), func: sl.func,
        count: f.count, total: f.total, self: f.self, mean: f.mean, p50: f.p50, p95: f.p95, min: f.min, max: f.max,
        inFrames: f.inFrames, rgb: sl.rgb, gpu: gpu
    };
};

/* The figures of the zones inside [t0, t1] of the embedded tracks. */
Stats.compute = function (D, t0, t1) {
    const rows = new Map();
    const span = D.zoneStats && D.zoneStats.span && D.zoneStats.span[0] >= 0 ? D.zoneStats.span : null;
    Data.forZonesIn(D, t0, t1, (t, i) => {
        const s = t.start[i], e = t.end[i];
        if (!(s >= t0 && s < t1 && e <= t1) || t.unfinished.has(i)) return;
        const gpu = t.kind === 'gpu', loc = t.loc[i], key = (gpu ? 'g' : 'c') + loc;
        let r = rows.get(key);
        if (!r) {
            r = { loc: loc, gpu: gpu, count: 0, total: 0, calls: 0, self: 0, min: Infinity, max: 0, inFrames: 0, h: new Map() };
            rows.set(key, r);
        }
        const d = t.dur[i];
        r.count++;
        r.calls += d;
        if (gpu || !Stats.nestedInside(t, i, t0, t1)) {
            r.total += d;
            if (span) r.inFrames += Math.max(0, Math.min(e, span[1]) - Math.max(s, span[0]));
        }
        r.self += Math.max(0, t.self[i]);
        if (d < r.min) r.min = d;
        if (d > r.max) r.max = d;
        const b = Stats.histBucket(d);
        r.h.set(b, (r.h.get(b) || 0) + 1);
    });
    const out = Stats.asyncRows(D, t0, t1);
    for (const r of rows.values())
        out.push(Stats.row(D, r.loc, r.gpu, {
            count: r.count, total: r.total, self: r.self, mean: r.calls / r.count, min: r.min, max: r.max,
            p50: Stats.histQuantile(r.h, r.count, r.min, r.max, 0.5), p95: Stats.histQuantile(r.h, r.count, r.min, r.max, 0.95),
            inFrames: r.inFrames
        }));
    return out;
};

/* An async track's row (loc < 0: the track, not a source location), or the row of one of its
 * span names (loc: the name's source location, data.js); a span has no children, so its self
 * time is its duration. */
Stats.asyncRow = function (D, t, loc, f) {
    const sl = loc >= 0 ? D.srclocs[loc] : null;
    return {
        loc: loc >= 0 ? loc : -2 - t.index, name: sl ? sl.name + ' (async ' + t.name + ')' : t.name + ' (async)',
        where: 'async track', func: '', async: true,
        count: f.count, total: f.total, self: f.total, mean: f.mean, p50: f.p50, p95: f.p95, min: f.min, max: f.max,
        inFrames: 0, rgb: sl ? sl.rgb : 0x9cc9ff, gpu: false
    };
};

/* A row per async track: its spans inside [t0, t1] that ended (those open at the end of the
 * capture have no duration), with the histogram's percentiles, as `mprof report` counts them;
 * null bounds: the whole capture, from the document's figures (every span, embedded or not). */
Stats.asyncRows = function (D, t0, t1) {
    const out = [];
    for (const t of D.tracks) {
        if (!t.async) continue;
        if (t0 === null) {
            const st = t.async.stats;
            if (st) out.push(Stats.asyncRow(D, t, -1, { count: st[0], total: st[1], min: st[2], max: st[3], mean: st[4], p50: st[5], p95: st[6] }));
            for (const r of t.async.nameStats)
                out.push(Stats.asyncRow(D, t, t.async.locBase + r[0], { count: r[1], total: r[2], min: r[3], max: r[4], mean: r[5], p50: r[6], p95: r[7] }));
            continue;
        }
        /* The track (key -1) and each of its names (key: the name's source location). */
        const acc = new Map();
        const add = (key, d) => {
            let r = acc.get(key);
            if (!r) acc.set(key, r = { count: 0, total: 0, min: Infinity, max: 0, h: new Map() });
            r.count++;
            r.total += d;
            if (d < r.min) r.min = d;
            if (d > r.max) r.max = d;
            const b = Stats.histBucket(d);
            r.h.set(b, (r.h.get(b) || 0) + 1);
        };
        for (let i = 0; i < t.n; i++) {
            const s = t.start[i], e = t.end[i];
            if (!(s >= t0 && s < t1 && e <= t1) || t.unfinished.has(i)) continue;
            add(-1, t.dur[i]);
            add(t.loc[i], t.dur[i]);
        }
        for (const [key, r] of acc)
            out.push(Stats.asyncRow(D, t, key, {
                count: r.count, total: r.total, min: r.min, max: r.max, mean: r.total / r.count,
                p50: Stats.histQuantile(r.h, r.count, r.min, r.max, 0.5), p95: Stats.histQuantile(r.h, r.count, r.min, r.max, 0.95)
            }));
    }
    return out;
};

/* The whole capture's figures from the document (every zone, embedded or not). */
Stats.whole = function (D) {
    const z = D.zoneStats, out = Stats.asyncRows(D, null, null);
    if (!z) return null;
    const add = (r, gpu) => out.push(Stats.row(D, r[0], gpu, {
        count: r[1], total: r[2], self: r[3], min: r[4], max: r[5], mean: r[6], p50: r[7], p95: r[8], inFrames: r[9]
    }));
    for (const r of z.rows || []) add(r, false);
    for (const r of z.gpu_rows || []) add(r, true);
    return out;
};

Stats.COLUMNS = [
    { key: 'name', label: 'Zone', fmt: null },
    { key: 'where', label: 'Location', fmt: null },
    { key: 'count', label: 'Count', fmt: U.fmtCount },
    { key: 'total', label: 'Total', fmt: U.fmtNs },
    { key: 'self', label: 'Self', fmt: U.fmtNs },
    { key: 'mean', label: 'Mean', fmt: U.fmtNs },
    { key: 'p50', label: 'p50', fmt: U.fmtNs },
    { key: 'p95', label: 'p95', fmt: U.fmtNs },
    { key: 'min', label: 'Min', fmt: U.fmtNs },
    { key: 'max', label: 'Max', fmt: U.fmtNs }
];

class StatsTable {
    constructor(D, host, app) {
        this.D = D;
        this.host = host;
        this.app = app;
        this.sortKey = 'total';
        this.sortDesc = true;
        this.rows = [];
        this.filter = '';
    }

    /* whole: the whole capture (the document's figures), else the zones inside [t0, t1]. */
    setRange(t0, t1, label, whole) {
        const w = whole ? Stats.whole(this.D) : null;
        this.rows = w || Stats.compute(this.D, t0, t1);
        this.label = w ? 'whole capture' : label;
        this.render();
    }

    render() {
        const host = this.host;
        host.textContent = '';
        const key = this.sortKey, desc = this.sortDesc;
        const rows = this.rows.filter((r) => !this.filter || r.name.toLowerCase().includes(this.filter));
        rows.sort((a, b) => {
            const x = a[key], y = b[key];
            const c = typeof x === 'string' ? x.localeCompare(y) : x - y;
            return desc ? -c : c;
        });
        const input = U.el('input', { type: 'search', placeholder: 'filter zones', value: this.filter, id: 'stats-filter' });
        input.addEventListener('input', () => {
            this.filter = input.value.toLowerCase();
            this.render();
            const again = document.getElementById('stats-filter');
            again.focus();
            again.setSelectionRange(again.value.length, again.value.length);
        });
        host.appendChild(U.el('div', { class: 'panel-head' }, [
            U.el('span', { text: (this.label || '') + ' \u2014 ' + rows.length + ' source locations ' }), input
        ]));
        const table = U.el('table', { class: 'grid', id: 'stats-table' });
        const head = U.el('tr');
        for (const c of Stats.COLUMNS) {
            const th = U.el('th', { text: c.label + (c.key === key ? (desc ? ' \u25bc' : ' \u25b2') : ''), 'data-key': c.key });
            th.addEventListener('click', () => {
                if (this.sortKey === c.key) this.sortDesc = !this.sortDesc;
                else {
                    this.sortKey = c.key;
                    this.sortDesc = c.fmt !== null;
                }
                this.render();
            });
            head.appendChild(th);
        }
        table.appendChild(head);
        const limit = Math.min(rows.length, 2000);
        for (let k = 0; k < limit; k++) {
            const r = rows[k];
            const tr = U.el('tr', { 'data-loc': String(r.loc) });
            if (this.app.timeline.highlightLoc === r.loc) tr.className = 'hl';
            for (const c of Stats.COLUMNS) {
                const td = U.el('td');
                if (c.key === 'name') {
                    td.appendChild(U.el('span', { class: 'swatch', style: 'background:' + U.rgbCss(r.rgb) }));
                    td.appendChild(document.createTextNode(r.name));
                } else td.textContent = c.fmt ? c.fmt(r[c.key]) : r[c.key];
                if (c.fmt) td.className = 'num';
                tr.appendChild(td);
            }
            tr.addEventListener('click', () => {
                const tl = this.app.timeline;
                tl.highlightLoc = tl.highlightLoc === r.loc ? -1 : r.loc;
                tl.requestDraw();
                this.render();
            });
            table.appendChild(tr);
        }
        host.appendChild(table);
        if (rows.length > limit) host.appendChild(U.el('p', { class: 'dim', text: (rows.length - limit) + ' more rows not shown; use the filter.' }));
    }
}
