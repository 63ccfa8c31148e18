/*
 * compare.js - two captures compared in the served page (`mprof view --serve A.mprof B.mprof`,
 * docs/VIEW.md "Comparing two captures"). The page shows one capture's timeline at a time (the A
 * and B buttons in the top bar switch it; every query then names the capture, serve.js's S.cap)
 * and a Compare tab with:
 *   - the scope: the whole captures, main frames from..to (the same numbers in both), a section
 *     (a frame set paired by name) or the selected range (the same offsets from each start);
 *   - frames: the two frame-time distributions overlaid (the same buckets on both sides, 8 per
 *     octave) and their figures side by side with the difference and the ratio;
 *   - zones: every zone of either capture, paired by the zone identity rule of `mprof diff`
 *     (/api/pairs), with count, total, mean, p95 and time per frame of each side and the
 *     differences, sorted by the change of time per frame (as `mprof diff` sorts its impact);
 *   - the zone picked: its two duration histograms overlaid (log count, normalised, or time per
 *     bucket) and its figures side by side.
 * Every figure comes from each capture's own index, computed by analysis/site_stats.h as
 * `mprof report` computes it. The address #compare&zone=NAME opens the tab on a zone (the gate's
 * report links here).
 */
'use strict';

(function () {
    const M = window.MPROF_SERVE, S = M.state;
    const status = document.getElementById('mprof-status');
    const set = (k, v) => { status.dataset[k] = String(v); };
    const fail = (e) => { S.errors++; set('errors', S.errors); set('lastError', 'compare: ' + (e.message || e)); };
    const COL = ['#5aa9e6', '#f2994a'];
    const C = {
        pairs: null, metas: [null, null], scope: { kind: 'whole', from: 0, to: 0, set: 0 },
        frames: [null, null], stats: [null, null], zone: null, hists: [null, null],
        sort: 'dframe', desc: true, filter: '', opt: { log: false, norm: false, time: false },
        want: null,
    };

    M.api('/api/pairs').then((p) => {
        C.pairs = p;
        return Promise.all([M.api('/api/meta', 0), M.api('/api/meta', 1)]);
    }).then((ms) => {
        if (!ms) return;
        C.metas = ms;
        setup();
    }).catch(() => { set('compare', 'off'); }); /* one capture: nothing to compare */

    const locName = (c, slot) => { const l = C.metas[c].srclocs[slot]; return l ? l[0] : '?'; };

    function setup() {
        set('compare', 'on');
        const bar = document.getElementById('bar');
        const sw = U.el('span', { id: 'cap-switch' });
        ['A', 'B'].forEach((n, c) => {
            const b = U.el('button', { text: n + ': ' + C.metas[c].capture.file, 'data-cap': n, class: c === S.cap ? 'active' : '' });
            b.addEventListener('click', () => showCapture(c));
            sw.appendChild(b);
        });
        bar.insertBefore(sw, document.getElementById('net'));
        set('cap', S.cap ? 'B' : 'A');
        M.addPanel('compare', 'Compare', panel);
        const z = /zone=([^&]*)/.exec(location.hash);
        if (/compare/.test(location.hash)) {
            C.want = z ? decodeURIComponent(z[1]) : null;
            S.tab = 'compare';
            M.showTab();
        }
    }

    function showCapture(c) {
        if (S.cap === c) return;
        S.cap = c;
        document.querySelectorAll('#cap-switch button').forEach((b, k) => { b.className = k === c ? 'active' : ''; });
        set('cap', c ? 'B' : 'A');
        M.reload().then(() => set('capShown', c ? 'B' : 'A')).catch(fail);
    }

    /* The queries of a side for the scope. */
    function scopeQuery(c) {
        const sc = C.scope, m = C.metas[c];
        const whole = '&t0=' + (m.start_ns - 1) + '&t1=' + (m.end_ns + 1);
        if (sc.kind === 'frames')
            return { frames: '&from=' + sc.from + '&to=' + sc.to, range: null };
        if (sc.kind === 'section') {
            const pair = C.pairs.sets.find((p) => p[0] === sc.set);
            const k = c ? (pair ? pair[1] : -1) : sc.set;
            return k < 0 ? null : { frames: '&set=' + k, stats: whole + '&set=' + k };
        }
        if (sc.kind === 'selection' && S.selRange) {
            const shown = C.metas[S.cap];
            const a = Math.floor(m.start_ns + (S.selRange[0] - shown.start_ns)), b = Math.ceil(m.start_ns + (S.selRange[1] - shown.start_ns));
            return { frames: '', stats: '&t0=' + a + '&t1=' + Math.max(b, a + 1) };
        }
        return { frames: '', stats: whole };
    }

    function load() {
        C.frames = [null, null];
        C.stats = [null, null];
        const qs = [scopeQuery(0), scopeQuery(1)];
        if (!qs[0] || !qs[1]) return Promise.reject(new Error('this section is not in both captures'));
        return Promise.all([0, 1].map((c) => M.api('/api/frames?w=1' + qs[c].frames, c))).then((fr) => {
            C.frames = fr;
            /* Frames from..to: their time span is each side's range. */
            return Promise.all([0, 1].map((c) => {
                let st = qs[c].stats;
                if (st === undefined || st === null)
                    st = fr[c].t0 !== undefined ? '&t0=' + fr[c].t0 + '&t1=' + (fr[c].t1 + 1) : '&t0=0&t1=1';
                return M.api('/api/stats?' + st.slice(1), c);
            }));
        }).then((st) => { C.stats = st; });
    }

    /* ---- drawing -------------------------------------------------------------------------------- */

    /* Two distributions of [lo, hi, count] buckets (the same edges on both sides) overlaid on a
     * log time axis. */
    function drawOverlay(cv, buckets, names, o) {
        const r = cv.getBoundingClientRect(), W = r.width || 600, H = r.height || 150;
        const ctx = U.fitCanvas(cv, W, H);
        ctx.fillStyle = '#17181b';
        ctx.fillRect(0, 0, W, H);
        ctx.font = '11px system-ui, sans-serif';
        ctx.textBaseline = 'middle';
        let lo = Infinity, hi = 0;
        for (const b of buckets) for (let i = 0; b && i < b.length; i += 3) { lo = Math.min(lo, Math.max(1, b[i])); hi = Math.max(hi, Math.min(b[i + 1], b[i] * 4)); }
        if (!(hi > lo)) { ctx.fillStyle = '#8b8f98'; ctx.fillText('nothing to show', 8, 12); return [0, 0]; }
        const L = Math.log(lo), R = Math.log(hi), xOf = (v) => 40 + ((Math.log(Math.max(v, lo)) - L) / (R - L)) * (W - 50);
        const val = (b, i, tot) => {
            let v = o.time ? b[i + 2] * Math.sqrt(Math.max(1, b[i]) * b[i + 1]) : b[i + 2];
            if (o.norm) v /= tot || 1;
            return v;
        };
        const totals = buckets.map((b) => { let t = 0; for (let i = 0; b && i < b.length; i += 3) t += o.time ? b[i + 2] * Math.sqrt(Math.max(1, b[i]) * b[i + 1]) : b[i + 2]; return t; });
        let mx = 0;
        buckets.forEach((b, k) => { for (let i = 0; b && i < b.length; i += 3) mx = Math.max(mx, val(b, i, totals[k])); });
        const yOf = (v) => H - 16 - (o.log ? Math.log1p(v * (o.norm ? 1000 : 1)) / Math.log1p(mx * (o.norm ? 1000 : 1)) : v / mx) * (H - 34);
        const bars = [0, 0];
        buckets.forEach((b, k) => {
            ctx.fillStyle = COL[k];
            ctx.globalAlpha = 0.55;
            for (let i = 0; b && i < b.length; i += 3) {
                const x0 = xOf(b[i]), x1 = Math.max(x0 + 2, xOf(Math.min(b[i + 1], b[i] * 4)));
                const y = yOf(val(b, i, totals[k]));
                ctx.fillRect(x0, y, x1 - x0 - 1, H - 16 - y);
                bars[k]++;
            }
        });
        ctx.globalAlpha = 1;
        ctx.fillStyle = '#9aa0aa';
        for (let e = Math.ceil(Math.log10(lo)); Math.pow(10, e) <= hi; e++) {
            const x = xOf(Math.pow(10, e));
            ctx.fillRect(x, H - 16, 1, 4);
            ctx.fillText(U.fmtNs(Math.pow(10, e)), x + 2, H - 6);
        }
        names.forEach((n, k) => { ctx.fillStyle = COL[k]; ctx.fillRect(44 + k * 200, 6, 10, 10); ctx.fillStyle = '#cfd3da'; ctx.fillText(n, 58 + k * 200, 11); });
        ctx.fillStyle = '#8b8f98';
        ctx.fillText(o.time ? 'time per bucket' : o.log ? 'count (log)' : 'count', W - 110, 11);
        return bars;
    }

    function grid(head, rows, cls) {
        const t = U.el('table', { class: 'grid' + (cls ? ' ' + cls : '') });
        t.appendChild(U.el('tr', null, head.map((h) => U.el('th', { text: h }))));
        for (const r of rows) t.appendChild(U.el('tr', null, r.map((c) => U.el('td', { text: String(c), class: typeof c === 'string' && /^[+-]?[0-9.,]+ ?(ns|us|ms|s|%|x)?$/.test(c) ? 'num' : '' }))));
        return t;
    }

    const fmtD = (d) => (d > 0 ? '+' : '') + U.fmtNs(d);
    const fmtR = (a, b) => (a > 0 ? (b / a).toFixed(3) + 'x' : '-');
    const fmtP = (a, b) => (a > 0 ? ((b - a) / a * 100 > 0 ? '+' : '') + ((b - a) / a * 100).toFixed(1) + ' %' : '-');

    /* Side-by-side figures: [label, a, b, as a duration?]. */
    function figures(list) {
        return grid(['', 'A', 'B', 'B - A', 'B / A', 'change'], list.map(([n, a, b, ns]) => [n,
            ns ? U.fmtNs(a) : U.fmtCount(a), ns ? U.fmtNs(b) : U.fmtCount(b),
            ns ? fmtD(b - a) : (b - a > 0 ? '+' : '') + U.fmtCount(b - a), fmtR(a, b), fmtP(a, b)]));
    }

    function framesBlock(host) {
        host.appendChild(U.el('h3', { text: 'Frames' }));
        const cv = U.el('canvas', { id: 'cmp-frames', class: 'series' });
        host.appendChild(cv);
        const [a, b] = C.frames;
        host.appendChild(figures([['frames', a.complete, b.complete], ['incomplete (spanned lost events)', a.incomplete, b.incomplete],
            ['total', a.total, b.total, 1], ['mean', a.mean, b.mean, 1], ['\u03c3', a.stddev, b.stddev, 1],
            ['min', a.min, b.min, 1], ['median', a.p50, b.p50, 1], ['p90', a.p90, b.p90, 1], ['p95', a.p95, b.p95, 1],
            ['p99', a.p99, b.p99, 1], ['max', a.max, b.max, 1]]));
        requestAnimationFrame(() => {
            const bars = drawOverlay(cv, [a.hist, b.hist], ['A: ' + U.fmtCount(a.complete) + ' frames', 'B: ' + U.fmtCount(b.complete) + ' frames'], C.opt);
            set('cmpFrameBarsA', bars[0]);
            set('cmpFrameBarsB', bars[1]);
        });
        set('cmpFramesA', a.complete);
        set('cmpFramesB', b.complete);
    }

    /* The zone table: pairs, then the zones of one side only. */
    function zoneRows() {
        const rowsOf = (st) => { const m = new Map(); for (const r of st.rows) m.set(r[0], r); return m; };
        const ra = rowsOf(C.stats[0]), rb = rowsOf(C.stats[1]);
        const per = (st, r) => (r && st.frames ? r[9] / st.frames : 0);
        const out = [];
        const add = (sa, sb) => {
            const a = sa >= 0 ? ra.get(sa) : null, b = sb >= 0 ? rb.get(sb) : null;
            if (!a && !b) return;
            const name = sa >= 0 ? locName(0, sa) : locName(1, sb);
            out.push({ sa: sa, sb: sb, name: name, a: a, b: b, status: a && b ? 'both' : a ? 'only in A' : 'only in B',
                ca: a ? a[1] : 0, cb: b ? b[1] : 0, ta: a ? a[2] : 0, tb: b ? b[2] : 0, ma: a ? a[6] : 0, mb: b ? b[6] : 0,
                pa: a ? a[8] : 0, pb: b ? b[8] : 0, fa: per(C.stats[0], a), fb: per(C.stats[1], b) });
        };
        for (const p of C.pairs.pairs) add(p[0], p[1]);
        for (const s of C.pairs.only_a) add(s, -1);
        for (const s of C.pairs.only_b) add(-1, s);
        for (const r of out) { r.dtotal = r.tb - r.ta; r.dmean = r.mb - r.ma; r.dframe = r.fb - r.fa; }
        return out;
    }

    const ZCOLS = [['name', 'zone'], ['status', 'paired'], ['ca', 'count A'], ['cb', 'count B'], ['ta', 'total A'], ['tb', 'total B'],
        ['dtotal', '\u0394 total'], ['ma', 'mean A'], ['mb', 'mean B'], ['dmean', '\u0394 mean'], ['pa', 'p95 A'], ['pb', 'p95 B'],
        ['fa', 'per frame A'], ['fb', 'per frame B'], ['dframe', '\u0394 per frame']];

    function zonesBlock(host) {
        host.appendChild(U.el('h3', { text: 'Zones (paired by name and function, as mprof diff pairs them; sorted by the change of time per frame)' }));
        const head = U.el('div', { class: 'panel-head' });
        const input = U.el('input', { type: 'search', placeholder: 'filter zones', value: C.filter, id: 'cmp-filter' });
        input.addEventListener('input', () => { C.filter = input.value.toLowerCase(); redrawZones(); });
        head.appendChild(input);
        host.appendChild(head);
        const box = U.el('div', { id: 'cmp-zones' });
        host.appendChild(box);
        const redrawZones = () => {
            box.textContent = '';
            let rows = zoneRows().filter((r) => !C.filter || r.name.toLowerCase().includes(C.filter));
            const k = C.sort;
            rows.sort((x, y) => {
                const a = x[k], b = y[k];
                const c = typeof a === 'string' ? a.localeCompare(b) : (k.startsWith('d') ? Math.abs(a) - Math.abs(b) : a - b);
                return C.desc ? -c : c;
            });
            const t = U.el('table', { class: 'grid', id: 'cmp-zone-table' });
            const tr = U.el('tr');
            for (const [key, label] of ZCOLS) {
                const th = U.el('th', { text: label + (key === C.sort ? (C.desc ? ' \u25bc' : ' \u25b2') : '') });
                th.addEventListener('click', () => { if (C.sort === key) C.desc = !C.desc; else { C.sort = key; C.desc = true; } redrawZones(); });
                tr.appendChild(th);
            }
            t.appendChild(tr);
            const ns = new Set(['ta', 'tb', 'dtotal', 'ma', 'mb', 'dmean', 'pa', 'pb', 'fa', 'fb', 'dframe']);
            for (const r of rows.slice(0, 2000)) {
                const row = U.el('tr', { class: 'pick' + (C.zone && C.zone.name === r.name ? ' hl' : ''), 'data-zone': r.name });
                for (const [key] of ZCOLS) {
                    const v = r[key];
                    const txt = ns.has(key) ? (key.startsWith('d') ? fmtD(v) : U.fmtNs(v)) : typeof v === 'number' ? U.fmtCount(v) : v;
                    const td = U.el('td', { text: txt, class: typeof v === 'number' ? 'num' : '' });
                    if (key === 'dframe' || key === 'dmean') td.style.color = v > 0 ? '#ff8f80' : v < 0 ? '#8fe0a0' : '';
                    row.appendChild(td);
                }
                row.addEventListener('click', () => pickZone(r));
                t.appendChild(row);
            }
            box.appendChild(t);
            set('cmpRows', rows.length);
            set('cmpPaired', rows.filter((r) => r.status === 'both').length);
        };
        redrawZones();
    }

    function pickZone(r) {
        C.zone = r;
        set('cmpZone', r.name);
        const st = scopeQuery(0), st1 = scopeQuery(1);
        const q = (c, slot) => {
            const s0 = c ? st1 : st;
            let extra = '';
            if (C.scope.kind !== 'whole') {
                const sq = s0.stats !== undefined && s0.stats !== null ? s0.stats
                    : C.frames[c] && C.frames[c].t0 !== undefined ? '&t0=' + C.frames[c].t0 + '&t1=' + (C.frames[c].t1 + 1) : '';
                extra = sq;
            }
            return slot < 0 ? Promise.resolve(null) : M.api('/api/hist?loc=' + slot + extra, c);
        };
        Promise.all([q(0, r.sa), q(1, r.sb)]).then((h) => { C.hists = h; M.showTab(); }).catch(fail);
    }

    function zoneBlock(host) {
        const r = C.zone;
        if (!r) {
            host.appendChild(U.el('div', { class: 'dim', text: 'Click a zone to compare its durations.' }));
            return;
        }
        host.appendChild(U.el('h3', { text: 'Zone ' + r.name + (r.status === 'both' ? '' : ' (' + r.status + ')') }));
        const opts = U.el('div', { class: 'panel-head' });
        [['log', 'log count'], ['norm', 'normalise'], ['time', 'time per bucket']].forEach(([k, label]) => {
            const cb = U.el('input', { type: 'checkbox', id: 'cmp-opt-' + k });
            cb.checked = C.opt[k];
            cb.addEventListener('change', () => { C.opt[k] = cb.checked; M.showTab(); });
            opts.appendChild(U.el('label', null, [cb, ' ' + label]));
        });
        host.appendChild(opts);
        const cv = U.el('canvas', { id: 'cmp-hist', class: 'series' });
        host.appendChild(cv);
        const [a, b] = C.hists;
        const z = { count: 0, total: 0, mean: 0, stddev: 0, min: 0, p50: 0, p95: 0, max: 0, buckets: [] };
        const ha = a || z, hb = b || z;
        const peak = (h) => { let m = 0; for (let i = 2; i < h.buckets.length; i += 3) m = Math.max(m, h.buckets[i]); return m; };
        const fr = (c) => (C.scope.kind === 'section' ? (C.frames[c].complete + C.frames[c].incomplete) : C.stats[c].frames);
        const pf = (h, c) => (fr(c) ? h.total / fr(c) : 0);
        host.appendChild(figures([['count', ha.count, hb.count], ['max count (histogram peak)', peak(ha), peak(hb)],
            ['total', ha.total, hb.total, 1], ['per frame', pf(ha, 0), pf(hb, 1), 1], ['mean', ha.mean, hb.mean, 1],
            ['\u03c3', ha.stddev, hb.stddev, 1], ['min', ha.min, hb.min, 1], ['median', ha.p50, hb.p50, 1],
            ['p95', ha.p95, hb.p95, 1], ['max', ha.max, hb.max, 1], ['self', ha.self || 0, hb.self || 0, 1]]));
        requestAnimationFrame(() => {
            const bars = drawOverlay(cv, [ha.buckets, hb.buckets], ['A: ' + U.fmtCount(ha.count) + ' zones', 'B: ' + U.fmtCount(hb.count) + ' zones'], C.opt);
            set('cmpHistBarsA', bars[0]);
            set('cmpHistBarsB', bars[1]);
        });
        set('cmpZoneCountA', ha.count);
        set('cmpZoneCountB', hb.count);
    }

    function scopeHead(host) {
        const head = U.el('div', { class: 'panel-head' });
        head.appendChild(U.el('span', { text: 'A ' + C.metas[0].capture.file + '  vs  B ' + C.metas[1].capture.file + '  \u2014 compare' }));
        const sel = U.el('select', { id: 'cmp-scope' });
        [['whole', 'the whole captures'], ['frames', 'main frames'], ['section', 'a section (frame set)'], ['selection', 'the selected range']]
            .forEach(([k, t]) => sel.appendChild(U.el('option', { value: k, text: t })));
        sel.value = C.scope.kind;
        head.appendChild(sel);
        const from = U.el('input', { type: 'number', id: 'cmp-from', value: String(C.scope.from), min: '0', style: 'width:6em' });
        const to = U.el('input', { type: 'number', id: 'cmp-to', value: String(C.scope.to || Math.min(C.metas[0].frames.count, C.metas[1].frames.count)), min: '1', style: 'width:6em' });
        const sec = U.el('select', { id: 'cmp-set' });
        for (const p of C.pairs.sets) {
            const fs = C.metas[0].frame_sets.find((f) => f.set === p[0]);
            sec.appendChild(U.el('option', { value: String(p[0]), text: fs ? fs.name + (fs.main ? ' (main)' : '') : String(p[0]) }));
        }
        sec.value = String(C.scope.set);
        const show = () => {
            from.style.display = to.style.display = sel.value === 'frames' ? '' : 'none';
            sec.style.display = sel.value === 'section' ? '' : 'none';
        };
        show();
        sel.addEventListener('change', show);
        const go = U.el('button', { text: 'Compare', id: 'cmp-go' });
        go.addEventListener('click', () => {
            C.scope = { kind: sel.value, from: Math.max(0, +from.value | 0), to: Math.max(1, +to.value | 0), set: +sec.value | 0 };
            if (C.scope.to <= C.scope.from) C.scope.to = C.scope.from + 1;
            C.loaded = false;
            M.showTab();
        });
        head.appendChild(from);
        head.appendChild(to);
        head.appendChild(sec);
        head.appendChild(go);
        host.appendChild(head);
    }

    function panel(p) {
        if (!C.metas[0]) { p.textContent = 'loading...'; return; }
        scopeHead(p);
        const body = U.el('div');
        p.appendChild(body);
        const render = () => {
            body.textContent = '';
            framesBlock(body);
            zonesBlock(body);
            zoneBlock(body);
            set('cmpScope', C.scope.kind + (C.scope.kind === 'frames' ? ':' + C.scope.from + ':' + C.scope.to : C.scope.kind === 'section' ? ':' + C.scope.set : ''));
            set('cmpReady', 1);
        };
        if (C.loaded) { render(); return; }
        body.textContent = 'loading...';
        set('cmpReady', 0);
        load().then(() => {
            C.loaded = true;
            if (C.want) {
                const r = zoneRows().find((x) => x.name === C.want);
                C.want = null;
                if (r) { pickZone(r); return; }
            }
            if (C.zone) { const r = zoneRows().find((x) => x.name === C.zone.name); if (r) { pickZone(r); return; } }
            render();
        }).catch((e) => { body.textContent = 'cannot compare: ' + (e.message || e); fail(e); });
    }
})();
