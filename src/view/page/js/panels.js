/*
 * panels.js - the tabbed panels under the timeline that are plain tables: memory (pools and
 * their usage graph), locks (contention), messages (a filterable log), the comparison with a
 * second capture (mprof view A B) and information about the capture and the embedded range.
 */
'use strict';

const Panels = {};

Panels.table = function (columns, rows, opts) {
    opts = opts || {};
    const table = U.el('table', { class: 'grid' + (opts.cls ? ' ' + opts.cls : '') });
    const head = U.el('tr');
    for (const c of columns) head.appendChild(U.el('th', { text: c.label }));
    table.appendChild(head);
    for (const r of rows) {
        const tr = U.el('tr');
        for (const c of columns) {
            const v = typeof c.get === 'function' ? c.get(r) : r[c.key];
            const td = U.el('td', { text: c.fmt ? c.fmt(v, r) : (v === undefined || v === null ? '' : String(v)) });
            if (c.num) td.className = 'num';
            if (c.color) {
                const col = c.color(v, r);
                if (col) td.style.color = col;
            }
            tr.appendChild(td);
        }
        if (opts.onclick) {
            tr.style.cursor = 'pointer';
            tr.addEventListener('click', () => opts.onclick(r));
        }
        table.appendChild(tr);
    }
    return table;
};

/* A small line graph of a plot series over the embedded range. */
Panels.seriesGraph = function (p, D) {
    const c = U.el('canvas', { class: 'series' });
    c.mprofDraw = () => {
        const W = c.clientWidth, H = 90;
        if (!W) return; /* hidden: drawn when its tab opens */
        const ctx = U.fitCanvas(c, W, H);
        ctx.fillStyle = '#1e1f22';
        ctx.fillRect(0, 0, W, H);
        const span = D.end - D.start;
        const lo = Math.min(0, p.min), hi = p.max > lo ? p.max : lo + 1;
        ctx.strokeStyle = U.rgbCss(p.rgb);
        ctx.beginPath();
        for (let i = 0; i < p.n; i++) {
            const x = ((p.ts[i] - D.start) / span) * W;
            const y = H - 4 - ((p.v[i] - lo) / (hi - lo)) * (H - 20);
            if (i === 0) ctx.moveTo(x, y);
            else ctx.lineTo(x, y);
        }
        ctx.stroke();
        ctx.fillStyle = '#ccc';
        ctx.font = '11px monospace';
        ctx.fillText(p.name + '  peak ' + U.fmtValue(p.max, p.format), 6, 10);
    };
    requestAnimationFrame(c.mprofDraw);
    return c;
};

Panels.memory = function (D, host) {
    const m = D.memory;
    host.appendChild(U.el('p', { class: 'dim', text: 'Allocations recorded with MPROF_ALLOC / MPROF_FREE, per pool, over the whole capture. Usage graphs cover the embedded range and also appear as plots under the timeline.' }));
    host.appendChild(Panels.table([
        { key: 'name', label: 'Pool' },
        { key: 'allocs', label: 'Allocations', num: true, fmt: U.fmtCount },
        { key: 'frees', label: 'Frees', num: true, fmt: U.fmtCount },
        { key: 'alloc_bytes', label: 'Bytes allocated', num: true, fmt: U.fmtBytes },
        { key: 'peak_bytes', label: 'Peak in use', num: true, fmt: U.fmtBytes },
        { key: 'end_bytes', label: 'In use at end', num: true, fmt: U.fmtBytes },
        { key: 'live', label: 'Live at end', num: true, fmt: U.fmtCount, color: (v) => (v > 0 ? '#f1c232' : null) },
        { key: 'bad_frees', label: 'Unknown frees', num: true, fmt: U.fmtCount, color: (v) => (v > 0 ? '#e06666' : null) }
    ], m.pools || []));
    for (const p of D.plots) if (p.format === 2 && p.name.startsWith('Memory')) host.appendChild(Panels.seriesGraph(p, D));
};

Panels.locks = function (D, host, app) {
    host.appendChild(U.el('p', { class: 'dim', text: 'Contention per lock over the whole capture. Each lock also has a track in the timeline: one row per thread, waiting (red) and holding (green). Click a row to show its track.' }));
    host.appendChild(Panels.table([
        { key: 'name', label: 'Lock' },
        { key: 'kind', label: 'Kind', get: (r) => ['mutex', 'mutex', 'rwlock', 'spin'][r.kind] || 'mutex' },
        { key: 'acquisitions', label: 'Acquired', num: true, fmt: U.fmtCount },
        { key: 'contended', label: 'Waited', num: true, fmt: U.fmtCount },
        { key: 'try_failed', label: 'Try failed', num: true, fmt: U.fmtCount },
        { key: 'wait_ns', label: 'Total wait', num: true, fmt: U.fmtNs },
        { key: 'max_wait_ns', label: 'Max wait', num: true, fmt: U.fmtNs, color: (v) => (v > D.budgetNs / 4 ? '#e06666' : null) },
        { key: 'hold_ns', label: 'Total held', num: true, fmt: U.fmtNs },
        { key: 'max_hold_ns', label: 'Max held', num: true, fmt: U.fmtNs },
        { key: 'threads', label: 'Threads', num: true }
    ], D.locks, {
        onclick: (r) => {
            const t = D.tracks[r.track];
            if (t) app.scrollToTrack(t);
        }
    }));
};

Panels.messages = function (D, host, app) {
    const m = D.messages;
    const sel = U.el('select', { id: 'msg-level' });
    for (let l = 1; l <= 6; l++) sel.appendChild(U.el('option', { value: String(l), text: U.LEVEL_NAMES[l] + ' and above' }));
    const list = U.el('div', { class: 'msglist' });
    const render = () => {
        list.textContent = '';
        const min = Number(sel.value);
        let shown = 0;
        for (let i = 0; i < m.n && shown < 5000; i++) {
            if (m.level[i] < min) continue;
            shown++;
            const tr = D.tracks[m.track[i]];
            const row = U.el('div', { class: 'msg' }, [
                U.el('span', { class: 'ts', text: U.fmtTs(m.ts[i], 1000) }),
                U.el('span', { class: 'lvl', style: 'color:' + U.LEVEL_COLORS[m.level[i]], text: U.LEVEL_NAMES[m.level[i]] }),
                U.el('span', { class: 'dim', text: tr ? tr.name : '' }),
                U.el('span', { text: m.text[i] })
            ]);
            const ts = m.ts[i];
            row.addEventListener('click', () => app.timeline.zoomTo(ts - 1e6, ts + 1e6));
            list.appendChild(row);
        }
        if (!shown) list.appendChild(U.el('p', { class: 'dim', text: 'No messages at this level.' }));
    };
    sel.addEventListener('change', render);
    host.appendChild(U.el('div', { class: 'panel-head' }, [U.el('span', { text: U.fmtCount(m.n) + ' messages in range; click one to zoom to it. Show ' }), sel]));
    host.appendChild(list);
    render();
};

Panels.diff = function (D, host) {
    const d = D.diff;
    const pct = (a, b) => (a ? ((100 * (b - a)) / a).toFixed(1) + ' %' : '');
    const deltaColor = (v) => (v > 0 ? '#e06666' : v < 0 ? '#6fcf7f' : null);
    host.appendChild(U.el('p', {}, [
        'A: ', U.el('b', { text: d.a.file }), '   B: ', U.el('b', { text: d.b.file }),
        U.el('span', { class: 'dim', text: '   (B minus A; red is slower in B)' })
    ]));
    host.appendChild(U.el('h3', { text: 'Frame times' }));
    const stats = ['frames', 'mean_ns', 'p50_ns', 'p90_ns', 'p95_ns', 'p99_ns', 'max_ns'];
    host.appendChild(Panels.table([
        { key: 'stat', label: '' },
        { key: 'a', label: 'A', num: true, fmt: (v, r) => (r.stat === 'frames' ? U.fmtCount(v) : U.fmtNs(v)) },
        { key: 'b', label: 'B', num: true, fmt: (v, r) => (r.stat === 'frames' ? U.fmtCount(v) : U.fmtNs(v)) },
        { key: 'd', label: 'B - A', num: true, fmt: (v, r) => (r.stat === 'frames' ? String(v) : U.fmtNs(v)), color: (v, r) => (r.stat === 'frames' ? null : deltaColor(v)) },
        { key: 'p', label: 'change', num: true }
    ], stats.map((s) => ({ stat: s.replace('_ns', ''), a: d.a[s], b: d.b[s], d: d.b[s] - d.a[s], p: pct(d.a[s], d.b[s]) }))));
    host.appendChild(U.el('h3', { text: 'Zones, by impact (change of total time per frame)' }));
    host.appendChild(Panels.table([
        { key: 'name', label: 'Zone' },
        { key: 'where', label: 'Location', get: (r) => (r.file ? r.file + ':' + r.line : '') },
        { key: 'status', label: 'In', get: (r) => (r.status === 'both' ? 'both' : r.status === 'only_a' ? 'A only' : 'B only') },
        { key: 'a_count', label: 'Count A', num: true, fmt: U.fmtCount },
        { key: 'b_count', label: 'Count B', num: true, fmt: U.fmtCount },
        { key: 'a_mean_ns', label: 'Mean A', num: true, fmt: U.fmtNs },
        { key: 'b_mean_ns', label: 'Mean B', num: true, fmt: U.fmtNs },
        { key: 'a_p95_ns', label: 'p95 A', num: true, fmt: U.fmtNs },
        { key: 'b_p95_ns', label: 'p95 B', num: true, fmt: U.fmtNs },
        { key: 'impact_ns', label: 'Impact / frame', num: true, fmt: U.fmtNs, color: deltaColor }
    ], d.zones || []));
};

Panels.info = function (D, host) {
    const c = D.capture, r = D.range;
    const rows = [
        ['Capture', c.file], ['Application', c.app], ['Duration', U.fmtNs(c.duration_ns)],
        ['Events', U.fmtCount(c.events || 0)], ['Zones in capture', U.fmtCount(c.zones || 0)],
        ['Zones embedded', U.fmtCount(D.zoneCount)], ['Threads', String(c.threads || 0)],
        ['Complete', c.complete ? 'yes' : 'no (cut off: the END chunk is missing)'],
        ['Events lost', U.fmtCount(c.lost_events || 0)], ['Timer', c.timer || ''],
        ['Range', (r.mode || 'all') + ': ' + U.fmtTs(D.start, 1000) + ' .. ' + U.fmtTs(D.end, 1000) +
            (r.first_frame !== undefined ? ' (frames ' + r.first_frame + ':' + r.last_frame + ')' : '')],
        ['Left out', r.omitted_zones ? U.fmtCount(r.omitted_zones) + ' zones' : 'nothing'],
        ['Frame budget', U.fmtNs(D.budgetNs)]
    ];
    if (r.note) rows.push(['Note', r.note]);
    host.appendChild(Panels.table([{ key: 0, label: 'Item' }, { key: 1, label: 'Value' }], rows, { cls: 'kv' }));
    host.appendChild(U.el('h3', { text: 'Controls' }));
    host.appendChild(U.el('p', { class: 'dim', text: 'Wheel: zoom at the cursor. Drag: pan (and scroll tracks). Shift+wheel: scroll tracks. Shift+drag or right-drag: select a range (statistics and flame graph follow it). Click a zone: select; double-click: zoom to it. Click a track header: collapse. W/S zoom, A/D pan, Home: whole range, Esc: clear selection. Click a frame in the frame graph to zoom to it.' }));
};
