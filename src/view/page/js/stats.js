/*
 * stats.js - zone statistics of a time range: one row per source location with count, total,
 * self, mean, median, p95, min and max, sortable by any column. Clicking a row highlights that
 * zone in the timeline; the range is the selection (or the clicked frame, or the whole range).
 */
'use strict';

const Stats = {};

/* Aggregates the zones overlapping [t0, t1] by source location. Durations are whole zones (a
 * zone that crosses the range's edge counts whole). Total is inclusive time counted once per
 * stretch of time on a track, as in `mprof report`: a zone nested inside another instance of
 * the same source location (recursion, direct or through other zones) adds its calls to the
 * count and its self time, not its duration, which its outer instance already holds. Mean, p50,
 * p95, min and max are over every call. */
Stats.compute = function (D, t0, t1) {
    const rows = new Map();
    Data.forZonesIn(D, t0, t1, (t, i) => {
        const loc = t.loc[i];
        let r = rows.get(loc);
        if (!r) {
            r = { loc: loc, count: 0, total: 0, calls: 0, self: 0, min: Infinity, max: 0, durs: [] };
            rows.set(loc, r);
        }
        const d = t.dur[i];
        r.count++;
        r.calls += d;
        if (!Stats.nested(t, i)) r.total += d;
        r.self += t.self[i];
        if (d < r.min) r.min = d;
        if (d > r.max) r.max = d;
        r.durs.push(d);
    });
    const out = [];
    for (const r of rows.values()) {
        const sorted = Float64Array.from(r.durs).sort();
        const sl = D.srclocs[r.loc];
        out.push({
            loc: r.loc, name: sl.name, where: (sl.file ? sl.file + ':' + sl.line : ''), func: sl.func,
            count: r.count, total: r.total, self: r.self, mean: r.calls / r.count,
            p50: U.percentile(sorted, 50), p95: U.percentile(sorted, 95), min: r.min, max: r.max,
            rgb: sl.rgb
        });
    }
    return out;
};

/* Whether zone i of track t runs inside another instance of its own source location. The outer
 * instance contains it, so it overlaps any range the inner one overlaps and is counted there. */
Stats.nested = function (t, i) {
    const loc = t.loc[i];
    for (let p = t.parent[i]; p >= 0; p = t.parent[p])
        if (t.loc[p] === loc) return true;
    return false;
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

    setRange(t0, t1, label) {
        this.rows = Stats.compute(this.D, t0, t1);
        this.label = label;
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
