/*
 * serve.js - the page of `mprof view --serve`: a timeline of the whole capture, drawn from what
 * the server answers for the current view (docs/VIEW.md, "THE SERVED VIEWER").
 *
 * The page never holds the capture. Each change of the view asks /api/zones for the zones of
 * the visible range at the canvas's width (zones narrower than a pixel come back merged, with
 * their count), /api/plots for a min/max per pixel and /api/messages; while an answer is on its
 * way the last one is drawn at the new scale, so zooming and panning stay smooth. The frame
 * graph covers every frame (/api/frames, the worst frame of each pixel). Find zone shows the
 * histogram of one source location's durations over the whole capture (/api/hist); a bar lists
 * its longest instances (/api/instances), and a row jumps to one. Statistics cover the
 * selected range (/api/stats).
 *
 * Layout: one track per thread, fiber, GPU context and lock; a track header collapses it, its
 * arrows move it; deep tracks show 12 levels until their "deeper" row is clicked; plots and
 * memory have their own strip under the timeline, never behind the tracks (plots.js: grouped,
 * folded when there are many, never taking the tracks' room); the frame graph is framegraph.js.
 * With two captures (compare.js) every query names the capture shown (S.cap).
 *
 * Extensions (more track kinds, panels) call MPROF_SERVE.addTrackPainter(fn) and
 * MPROF_SERVE.addPanel(name, fn) from a script loaded after this one.
 */
'use strict';

const S = {
    meta: null, order: [], collapsed: {}, expanded: {}, collapsedProc: {},
    view: { t0: 0, t1: 1 }, loaded: null, zones: null, plots: null, msgs: null, frames: null,
    selZone: null, hilite: -1, selRange: null, scrollY: 0, tab: 'find', requests: 0, errors: 0,
    inflight: false, pending: false, painters: [], panels: {}, rows: [], hist: null, histLoc: -1,
    inst: null, stats: null, cap: 0,
    /* Set by the scripts loaded after this one: plots.js draws the plot strip, framegraph.js the
     * frame graph and loads its frames, layout.js says where a fold marker takes a label's room. */
    drawPlots: null, drawFrames: null, loadFrames: null, labelInset: null,
};
const ROW = 18, HEAD = 18, RULER = 22, DEPTH_CAP = 12, PLOT_H = 36;
const status = document.getElementById('mprof-status');

window.addEventListener('error', () => { S.errors++; status.dataset.errors = S.errors; });
window.addEventListener('unhandledrejection', () => { S.errors++; status.dataset.errors = S.errors; });

/* A query of the capture shown (c=1: the second of a comparison, compare.js), or of capture c. */
function api(path, c) {
    S.requests++;
    const cap = c === undefined ? S.cap : c;
    if (cap && path.startsWith('/api/') && !path.startsWith('/api/live') && !path.startsWith('/api/pairs'))
        path += (path.includes('?') ? '&' : '?') + 'c=' + cap;
    return fetch(path).then((r) => r.json().then((j) => {
        if (!r.ok) throw new Error(j.error || r.statusText);
        return j;
    }));
}

function setStatus(k, v) { status.dataset[k] = String(v); }
function loc(i) { return S.meta.srclocs[i] || ['?', '', '', 0, 0]; }
function locRgb(i) { const l = loc(i); return U.zoneRgb(l[4], l[0]); }
function trackById(id) { return S.meta.tracks.find((t) => t.id === id); }
/* A capture of several processes (/api/meta's processes): "NAME, pid N" of process i, or null. */
function processName(i) {
    const p = S.meta.processes && i !== undefined && i !== null && i >= 0 ? S.meta.processes[i] : null;
    return p ? (p.name || 'process') + ', pid ' + p.pid : null;
}
/* A track's or a source location's name with its process where there are several. */
function trackLabel(t) { const p = t ? processName(t.process) : null; return t ? (p ? t.name + ' (' + p + ')' : t.name) : '?'; }
function locLabel(i) { const l = loc(i), p = processName(l[5]); return p ? l[0] + ' (' + p + ')' : l[0]; }
function processHeader(i) {
    const p = S.meta.processes[i];
    return (p.name || 'process') + ' (pid ' + p.pid + ')' + (p.ended_by ? '  ended early: ' + p.ended_by : '');
}

/* ---- layout ---------------------------------------------------------------------------------- */

/* Rows from the top of the track area: {track, depth (-1 header, -2 "deeper", -3 the header of
 * a process, over its tracks, in a capture of several: proc, track its first), y}. */
function layout() {
    const rows = [];
    let y = RULER, prev = -1;
    const procs = S.meta.processes && S.meta.processes.length > 1 ? S.meta.processes : null;
    for (const id of S.order) {
        const t = trackById(id);
        const p = procs && t.process !== undefined && t.process < procs.length ? t.process : -1;
        if (p >= 0 && p !== prev) { rows.push({ track: id, depth: -3, proc: p, y: y }); y += HEAD; }
        prev = p;
        if (p >= 0 && S.collapsedProc[p]) continue;
        rows.push({ track: id, depth: -1, y: y });
        y += HEAD;
        if (S.collapsed[id]) continue;
        const shown = S.expanded[id] ? t.depths : Math.min(t.depths, DEPTH_CAP);
        for (let d = 0; d < shown; d++) { rows.push({ track: id, depth: d, y: y }); y += ROW; }
        if (shown < t.depths) { rows.push({ track: id, depth: -2, y: y }); y += ROW; }
    }
    S.rows = rows;
    S.contentH = y;
    return rows;
}

function rowOf(track, depth) {
    for (const r of S.rows) if (r.track === track && r.depth === depth) return r;
    return null;
}

/* ---- timeline drawing ------------------------------------------------------------------------ */

const tl = document.getElementById('timeline');

function tlSize() { const r = tl.parentElement.getBoundingClientRect(); return { w: r.width, h: r.height }; }
function xOf(t, w) { return ((t - S.view.t0) / (S.view.t1 - S.view.t0)) * w; }
function tOf(x, w) { return S.view.t0 + (x / w) * (S.view.t1 - S.view.t0); }

function drawTimeline() {
    if (!S.meta) return;
    const { w, h } = tlSize();
    const ctx = U.fitCanvas(tl, w, h);
    layout();
    const maxScroll = Math.max(0, S.contentH - h + 10);
    S.scrollY = Math.max(0, Math.min(S.scrollY, maxScroll));
    ctx.fillStyle = '#1b1c1f';
    ctx.fillRect(0, 0, w, h);
    ctx.font = '11px system-ui, sans-serif';
    ctx.textBaseline = 'middle';
    let drawn = 0, merged = 0;
    const labels = []; /* what each label says and where it starts (for tests: S.labels) */
    ctx.save();
    ctx.translate(0, -S.scrollY);
    /* Track headers and backgrounds. */
    for (const r of S.rows) {
        const t = trackById(r.track);
        if (r.depth === -3) {
            const p = S.meta.processes[r.proc];
            ctx.fillStyle = '#3a3550';
            ctx.fillRect(0, r.y, w, HEAD);
            ctx.fillStyle = p.ended_by ? '#ffb36b' : '#d9d2ff';
            ctx.fillText((S.collapsedProc[r.proc] ? '\u25b6 ' : '\u25bc ') + processHeader(r.proc), 6, r.y + HEAD / 2);
        } else if (r.depth === -1) {
            ctx.fillStyle = '#26272b';
            ctx.fillRect(0, r.y, w, HEAD);
            ctx.fillStyle = '#cfd3da';
            const mark = S.collapsed[r.track] ? '\u25b6' : '\u25bc';
            const what = t.kind === 'async' ? U.fmtCount(t.zones) + ' spans, ' + t.depths + ' lanes' +
                (t.open_at_end ? ', ' + t.open_at_end + ' open at the end' : '')
                : U.fmtCount(t.zones) + ' zones, ' + t.depths + ' levels';
            ctx.fillText(mark + ' ' + t.name + '  (' + t.kind + ', ' + what + ')   \u25b2 \u25bc', 6, r.y + HEAD / 2);
        } else if (r.depth === -2) {
            ctx.fillStyle = '#8b8f98';
            ctx.fillText('+ ' + (t.depths - DEPTH_CAP) + ' deeper levels (click to show)', 20, r.y + ROW / 2);
        }
    }
    /* Zones and merged spans from the last answer, at the current scale. */
    const z = S.zones;
    if (z) {
        for (const lv of z.levels) {
            const r = rowOf(lv.track, lv.depth);
            if (!r || r.y - S.scrollY > h || r.y + ROW - S.scrollY < 0) continue;
            const a = lv.z;
            for (let i = 0; i < a.length; i += 4) {
                const x0 = xOf(a[i], w), x1 = xOf(a[i + 1], w);
                if (x1 < 0 || x0 > w) continue;
                if (S.hidden && S.hidden(lv.track, lv.depth, a[i], a[i + 1])) continue; /* folded (layout.js) */
                const rgb = locRgb(a[i + 2]);
                const dim = S.hilite >= 0 && a[i + 2] !== S.hilite;
                ctx.fillStyle = U.rgbCss(dim ? U.shade(rgb, 0.45) : rgb);
                const cx = Math.max(x0, -2), cw = Math.max(1, Math.min(x1, w + 2) - cx);
                ctx.fillRect(cx, r.y + 1, cw, ROW - 2);
                if (lv.th && lv.th[(i / 4) * 3 + 1] < 0 && x1 <= w + 2 && cw > 6) {
                    /* An async span open at the end of the capture: a white arrow at its end. */
                    ctx.fillStyle = '#fff';
                    ctx.beginPath();
                    ctx.moveTo(x1 - 6, r.y + 2);
                    ctx.lineTo(x1, r.y + ROW / 2);
                    ctx.lineTo(x1 - 6, r.y + ROW - 2);
                    ctx.closePath();
                    ctx.fill();
                }
                if (S.selZone && S.selZone.s === a[i] && S.selZone.track === lv.track && S.selZone.depth === lv.depth) {
                    ctx.strokeStyle = '#fff';
                    ctx.lineWidth = 2;
                    ctx.strokeRect(cx + 1, r.y + 2, cw - 2, ROW - 4);
                }
                /* The label starts after a fold marker (layout.js), never under it, and is cut at
                 * its end: the start of the name stays. */
                const inset = S.labelInset ? S.labelInset(lv.track, lv.depth, a[i], a[i + 1], Math.min(x1, w) - Math.max(x0, 0)) : 0;
                if (cw - inset > 30) {
                    ctx.fillStyle = U.textOn(rgb);
                    const text = U.fitText(ctx, loc(a[i + 2])[0] + ' ' + U.fmtNs(a[i + 1] - a[i]), cw - 6 - inset, 6);
                    ctx.fillText(text, cx + 3 + inset, r.y + ROW / 2);
                    labels.push({ track: lv.track, depth: lv.depth, s: a[i], x: cx + 3 + inset, text: text, name: loc(a[i + 2])[0] });
                }
                drawn++;
            }
            const m = lv.m;
            for (let i = 0; i < m.length; i += 3) {
                const x0 = xOf(m[i], w), x1 = Math.max(xOf(m[i + 1], w), x0 + 1);
                if (x1 < 0 || x0 > w) continue;
                if (S.hidden && S.hidden(lv.track, lv.depth, m[i], m[i + 1])) continue;
                ctx.fillStyle = '#5b606b';
                ctx.fillRect(x0, r.y + 3, x1 - x0, ROW - 6);
                if (x1 - x0 > 40) {
                    ctx.fillStyle = '#e6e6e6';
                    ctx.fillText(U.fitText(ctx, U.fmtCount(m[i + 2]) + ' zones', x1 - x0 - 6, 6), x0 + 3, r.y + ROW / 2);
                }
                merged += m[i + 2];
            }
        }
    }
    for (const p of S.painters) p(ctx, { w: w, h: h, xOf: (t) => xOf(t, w), rows: S.rows, view: S.view });
    const drop = S.dropOn !== null && S.dropOn !== undefined ? rowOf(S.dropOn, -1) : null;
    if (drop) { ctx.fillStyle = '#9fb9ff'; ctx.fillRect(0, drop.y - 1, w, 3); }
    ctx.restore();
    /* Ruler, messages and the selected range on top. */
    ctx.fillStyle = '#222327';
    ctx.fillRect(0, 0, w, RULER);
    const nsPerPx = (S.view.t1 - S.view.t0) / w;
    const step = U.niceStep(nsPerPx, 90);
    ctx.fillStyle = '#9aa0aa';
    ctx.strokeStyle = '#3a3c41';
    ctx.lineWidth = 1;
    for (let t = Math.ceil(S.view.t0 / step) * step; t < S.view.t1; t += step) {
        const x = Math.round(xOf(t, w)) + 0.5;
        ctx.beginPath();
        ctx.moveTo(x, RULER - 6);
        ctx.lineTo(x, h);
        ctx.stroke();
        ctx.fillText(U.fmtTs(t, step), x + 3, 8);
    }
    if (S.msgs) {
        for (const mm of S.msgs.m) {
            const x = xOf(mm[0], w);
            if (x < 0 || x > w) continue;
            ctx.fillStyle = (S.meta.level_colors && S.meta.level_colors[mm[1]] !== undefined)
                ? U.rgbCss(S.meta.level_colors[mm[1]]) : U.LEVEL_COLORS[mm[1]] || '#ccc';
            ctx.beginPath();
            ctx.moveTo(x - 4, RULER - 8);
            ctx.lineTo(x + 4, RULER - 8);
            ctx.lineTo(x, RULER - 1);
            ctx.fill();
        }
    }
    if (S.selRange) {
        const x0 = xOf(S.selRange[0], w), x1 = xOf(S.selRange[1], w);
        ctx.fillStyle = 'rgba(120,160,255,0.18)';
        ctx.fillRect(x0, RULER, x1 - x0, h);
    }
    S.labels = labels;
    /* A capture of several processes: the header rows laid out, for tests. */
    if (S.meta.processes) setStatus('processHeaders', S.rows.filter((r) => r.depth === -3).map((r) => processHeader(r.proc)).join('|'));
    setStatus('drawnZones', drawn);
    setStatus('mergedZones', merged);
    drawPlots();
    drawFrames();
}

function drawPlots() { if (S.drawPlots) S.drawPlots(); }

function drawFrames() { if (S.drawFrames) S.drawFrames(); }

/* ---- data ------------------------------------------------------------------------------------ */

function viewQuery() {
    const w = Math.max(1, Math.round(tlSize().w));
    const t0 = Math.floor(S.view.t0), t1 = Math.max(Math.ceil(S.view.t1), t0 + 1);
    return 't0=' + t0 + '&t1=' + t1 + '&w=' + w;
}

function refresh() {
    if (S.inflight) { S.pending = true; return; }
    S.inflight = true;
    const v = { t0: S.view.t0, t1: S.view.t1 };
    const q = viewQuery();
    const net = document.getElementById('net');
    const t = performance.now();
    Promise.all([api('/api/zones?' + q), api('/api/plots?' + q), api('/api/messages?' + q.replace(/&w=\d+/, '') + '&limit=2000')])
        .then(([z, p, m]) => {
            S.zones = z; S.plots = p; S.msgs = m;
            S.loaded = v;
            net.textContent = 'answer ' + (performance.now() - t).toFixed(0) + ' ms, ' + U.fmtCount(z.drawn) +
                ' zones + ' + U.fmtCount(z.merged) + ' merged';
            drawTimeline();
            setStatus('loadedView', Math.floor(v.t0) + ':' + Math.ceil(v.t1));
            setStatus('requests', S.requests);
        })
        .catch((e) => { S.errors++; setStatus('errors', S.errors); setStatus('lastError', q + ': ' + (e.message || e)); net.textContent = String(e.message || e); })
        .finally(() => {
            S.inflight = false;
            if (S.pending) { S.pending = false; refresh(); }
        });
}

let rafPending = false;
function setView(t0, t1, auto) {
    if (!auto) S.follow = false;
    const end = (S.meta.end_ns - S.meta.start_ns) || 1;
    const span = Math.max(100, Math.min(t1 - t0, end * 1.2));
    if (t1 - t0 !== span) { const c = (t0 + t1) / 2; t0 = c - span / 2; t1 = c + span / 2; }
    S.view = { t0: t0, t1: t1 };
    setStatus('view', Math.floor(t0) + ':' + Math.ceil(t1));
    history.replaceState(null, '', '#view=' + Math.floor(t0) + ':' + Math.ceil(t1));
    if (!rafPending) {
        rafPending = true;
        /* The next animation frame, or a timer where there is none (a hidden page gets none). */
        const run = () => { if (!rafPending) return; rafPending = false; drawTimeline(); refresh(); };
        requestAnimationFrame(run);
        setTimeout(run, 200);
    }
}

/* ---- input ----------------------------------------------------------------------------------- */

function zoneAt(x, y) {
    const w = tlSize().w, yy = y + S.scrollY;
    const r = S.rows.find((q) => yy >= q.y && yy < q.y + (q.depth === -1 ? HEAD : ROW));
    if (!r) return null;
    if (r.depth < 0 || !S.zones) return { row: r };
    const lv = S.zones.levels.find((l) => l.track === r.track && l.depth === r.depth);
    if (!lv) return { row: r };
    const t = tOf(x, w), tol = (S.view.t1 - S.view.t0) / w * 2;
    const shown = (a, b) => !(S.hidden && S.hidden(r.track, r.depth, a, b));
    for (let i = 0; i < lv.z.length; i += 4)
        if (t >= lv.z[i] - tol && t <= lv.z[i + 1] + tol && shown(lv.z[i], lv.z[i + 1]))
            return { row: r, zone: { s: lv.z[i], e: lv.z[i + 1], loc: lv.z[i + 2], self: lv.z[i + 3], track: r.track, depth: r.depth,
                th: lv.th ? lv.th.slice((i / 4) * 3, (i / 4) * 3 + 3) : null } };
    for (let i = 0; i < lv.m.length; i += 3)
        if (t >= lv.m[i] - tol && t <= lv.m[i + 1] + tol && shown(lv.m[i], lv.m[i + 1]))
            return { row: r, merged: { s: lv.m[i], e: lv.m[i + 1], n: lv.m[i + 2] } };
    return { row: r };
}

/* A thread of the capture by index, for async spans (/api/meta's async_threads). */
function threadName(i) {
    const n = S.meta.async_threads || [];
    return n[i] !== undefined ? n[i] : 'thread ' + i;
}

function describe(z) {
    const l = loc(z.loc), t = trackById(z.track);
    if (t && t.kind === 'async')
        return l[0] + '  ' + U.fmtNs(z.e - z.s) + '  at ' + U.fmtTs(z.s, 1000) + '  async ' + t.name + ' lane ' + z.depth +
            (z.th ? '  begun on ' + threadName(z.th[0]) + ', ' + (z.th[1] < 0 ? 'open at the end of the capture' : 'ended on ' + threadName(z.th[1])) +
                (z.th[2] ? ' (its id was begun again while it was open)' : '') : '');
    return l[0] + '  ' + U.fmtNs(z.e - z.s) + ' (self ' + U.fmtNs(z.self) + ')  at ' + U.fmtTs(z.s, 1000) +
        '  ' + (l[1] ? l[1] + '  ' : '') + (l[2] ? l[2] + ':' + l[3] + '  ' : '') + trackLabel(t) + ' depth ' + z.depth;
}

function selectZone(z) {
    S.selZone = z;
    document.getElementById('zone-detail').textContent = z ? describe(z) : '';
    setStatus('selected', z ? loc(z.loc)[0] : '');
    drawTimeline();
}

function moveTrack(id, dir) {
    const i = S.order.indexOf(id), j = i + dir;
    if (j < 0 || j >= S.order.length) return;
    S.order[i] = S.order[j];
    S.order[j] = id;
    setStatus('trackNames', S.order.map((k) => trackById(k).name).join('|'));
    drawTimeline();
}

function initInput() {
    let drag = null;
    tl.addEventListener('wheel', (e) => {
        e.preventDefault();
        if (e.shiftKey) { S.scrollY += e.deltaY; drawTimeline(); return; }
        const w = tlSize().w, r = tl.getBoundingClientRect();
        const f = Math.pow(1.0015, e.deltaY), t = tOf(e.clientX - r.left, w);
        setView(t - (t - S.view.t0) * f, t + (S.view.t1 - t) * f);
    }, { passive: false });
    tl.addEventListener('mousedown', (e) => {
        const r = tl.getBoundingClientRect();
        drag = { x: e.clientX, y: e.clientY, v: S.view, sy: S.scrollY, sel: e.shiftKey || e.button === 2,
                 t: tOf(e.clientX - r.left, tlSize().w), moved: false };
        /* A drag that starts on a track header moves the track (dropped where it is let go). */
        const h0 = drag.sel ? null : zoneAt(e.clientX - r.left, e.clientY - r.top);
        if (h0 && h0.row.depth === -1) drag.track = h0.row.track;
    });
    tl.addEventListener('contextmenu', (e) => e.preventDefault());
    window.addEventListener('mousemove', (e) => {
        if (!drag) return;
        const dx = e.clientX - drag.x, dy = e.clientY - drag.y;
        if (Math.abs(dx) + Math.abs(dy) > 3) drag.moved = true;
        if (!drag.moved) return;
        const w = tlSize().w, r = tl.getBoundingClientRect();
        if (drag.track !== undefined) {
            const over = zoneAt(e.clientX - r.left, e.clientY - r.top);
            S.dropOn = over ? over.row.track : null;
            drawTimeline();
        } else if (drag.sel) {
            const t = tOf(e.clientX - r.left, w);
            S.selRange = [Math.min(t, drag.t), Math.max(t, drag.t)];
            drawTimeline();
        } else {
            const dt = (dx / w) * (drag.v.t1 - drag.v.t0);
            S.scrollY = drag.sy - dy;
            setView(drag.v.t0 - dt, drag.v.t1 - dt);
        }
    });
    window.addEventListener('mouseup', (e) => {
        if (!drag) return;
        const d = drag;
        drag = null;
        if (d.moved) {
            if (d.track !== undefined) {
                S.dropOn = null;
                const r0 = tl.getBoundingClientRect(), over = zoneAt(e.clientX - r0.left, e.clientY - r0.top);
                if (over && over.row.track !== d.track && over.row.depth !== -3) {
                    const to = S.order.indexOf(over.row.track);
                    S.order.splice(S.order.indexOf(d.track), 1);
                    S.order.splice(to, 0, d.track);
                    setStatus('trackNames', S.order.map((k) => trackById(k).name).join('|'));
                }
                drawTimeline();
            }
            if (d.sel && S.selRange) { S.tab = 'stats'; showTab(); }
            return;
        }
        const r = tl.getBoundingClientRect();
        const hit = zoneAt(e.clientX - r.left, e.clientY - r.top);
        if (!hit) return;
        if (hit.row.depth === -3) {
            S.collapsedProc[hit.row.proc] = !S.collapsedProc[hit.row.proc];
            drawTimeline();
        } else if (hit.row.depth === -1) {
            const x = e.clientX - r.left;
            const ctx = tl.getContext('2d');
            const t = trackById(hit.row.track);
            const label = '\u25bc ' + t.name + '  (' + t.kind + ', ' + U.fmtCount(t.zones) + ' zones, ' + t.depths + ' levels)   ';
            const ax = 6 + ctx.measureText(label).width;
            if (x >= ax && x < ax + 12) moveTrack(hit.row.track, -1);
            else if (x >= ax + 12 && x < ax + 26) moveTrack(hit.row.track, 1);
            else { S.collapsed[hit.row.track] = !S.collapsed[hit.row.track]; drawTimeline(); }
        } else if (hit.row.depth === -2) {
            S.expanded[hit.row.track] = true;
            drawTimeline();
        } else if (hit.zone && S.onZoneClick && S.onZoneClick(hit.zone, e.clientX - r.left)) drawTimeline();
        else if (hit.zone) selectZone(hit.zone);
        else if (hit.merged) setView(hit.merged.s, hit.merged.e + (hit.merged.e - hit.merged.s) * 0.05);
        else selectZone(null);
    });
    tl.addEventListener('dblclick', (e) => {
        const r = tl.getBoundingClientRect();
        const hit = zoneAt(e.clientX - r.left, e.clientY - r.top);
        if (hit && hit.zone) zoomTo(hit.zone.s, hit.zone.e);
    });
    tl.addEventListener('mousemove', (e) => {
        const tip = document.getElementById('tooltip');
        const r = tl.getBoundingClientRect();
        const hit = drag ? null : zoneAt(e.clientX - r.left, e.clientY - r.top);
        if (hit && (hit.zone || hit.merged)) {
            tip.textContent = hit.zone ? describe(hit.zone) : U.fmtCount(hit.merged.n) + ' zones merged over ' +
                U.fmtNs(hit.merged.e - hit.merged.s) + ' (click to zoom in)';
            tip.style.display = 'block';
            tip.style.left = Math.min(e.clientX + 14, window.innerWidth - 420) + 'px';
            tip.style.top = (e.clientY + 14) + 'px';
        } else tip.style.display = 'none';
    });
    tl.addEventListener('keydown', (e) => {
        const s = S.view.t1 - S.view.t0, c = (S.view.t0 + S.view.t1) / 2;
        if (e.key === 'w' || e.key === 'W') setView(c - s * 0.35, c + s * 0.35);
        else if (e.key === 's' || e.key === 'S') setView(c - s * 0.7, c + s * 0.7);
        else if (e.key === 'a' || e.key === 'A') setView(S.view.t0 - s * 0.2, S.view.t1 - s * 0.2);
        else if (e.key === 'd' || e.key === 'D') setView(S.view.t0 + s * 0.2, S.view.t1 + s * 0.2);
        else if (e.key === 'Home') { setView(S.meta.start_ns, S.meta.end_ns || 1); S.follow = true; }
        else if (e.key === 'Escape') { S.selRange = null; S.hilite = -1; selectZone(null); }
    });
    window.addEventListener('resize', () => { loadFrames(); setView(S.view.t0, S.view.t1, true); });
}

function zoomTo(s, e) {
    const pad = Math.max((e - s) * 0.08, 50);
    setView(s - pad, e + pad);
}

/* ---- panels ---------------------------------------------------------------------------------- */

function table(head, rows, onPick) {
    const t = U.el('table', { class: 'grid' });
    t.appendChild(U.el('tr', null, head.map((h) => U.el('th', { text: h }))));
    rows.forEach((r, i) => {
        const tr = U.el('tr', onPick ? { class: 'pick' } : null, r.map((c) => U.el('td', { text: String(c) })));
        if (onPick) tr.addEventListener('click', () => onPick(i));
        t.appendChild(tr);
    });
    return t;
}

function panelFind(p) {
    const head = U.el('div', { class: 'find-head' });
    const input = U.el('input', { id: 'find-input', list: 'find-names', placeholder: 'zone name, then Enter' });
    const dl = U.el('datalist', { id: 'find-names' });
    const names = S.meta.loc_stats.map((r) => r[0]).sort((a, b) => loc(a)[0].localeCompare(loc(b)[0]));
    for (const i of names) dl.appendChild(U.el('option', { value: locLabel(i) }));
    head.appendChild(U.el('span', { text: 'Find zone' }));
    head.appendChild(input);
    head.appendChild(dl);
    const info = U.el('span', { class: 'dim', id: 'find-info' });
    head.appendChild(info);
    p.appendChild(head);
    const cv = U.el('canvas', { id: 'hist' });
    p.appendChild(cv);
    const list = U.el('div', { id: 'instances' });
    p.appendChild(list);
    input.addEventListener('keydown', (e) => {
        if (e.key !== 'Enter') return;
        const want = input.value.trim();
        const hit = S.meta.loc_stats.find((r) => locLabel(r[0]) === want) || S.meta.loc_stats.find((r) => loc(r[0])[0] === want) ||
            S.meta.loc_stats.find((r) => loc(r[0])[0].toLowerCase().includes(want.toLowerCase()));
        if (hit) findZone(hit[0]);
        else info.textContent = 'no zone named "' + want + '"';
    });
    if (S.histLoc >= 0) { input.value = locLabel(S.histLoc); drawHist(); showInstances(); }
}

function findZone(l) {
    S.histLoc = l;
    S.hilite = l;
    S.inst = null;
    api('/api/hist?loc=' + l).then((h) => {
        S.hist = h;
        S.tab = 'find';
        showTab();
        drawTimeline();
    }).catch(() => { S.errors++; setStatus('errors', S.errors); });
}

function histBars() {
    const b = S.hist.buckets, bars = [];
    for (let i = 0; i < b.length; i += 3) bars.push({ lo: b[i], hi: b[i + 1], n: b[i + 2] });
    return bars;
}

function histBarRect(i) {
    const cv = document.getElementById('hist');
    const r = cv.getBoundingClientRect(), bars = histBars();
    const bw = r.width / bars.length;
    return { x: r.left + (i + 0.5) * bw, y: r.bottom - 4, w: bw };
}

function drawHist() {
    const cv = document.getElementById('hist');
    if (!cv || !S.hist) return;
    const r = cv.getBoundingClientRect();
    const ctx = U.fitCanvas(cv, r.width, r.height);
    ctx.fillStyle = '#17181b';
    ctx.fillRect(0, 0, r.width, r.height);
    const bars = histBars(), bw = r.width / bars.length;
    const mx = Math.max(1, ...bars.map((b) => b.n));
    const rgb = locRgb(S.histLoc);
    ctx.font = '11px system-ui, sans-serif';
    bars.forEach((b, i) => {
        const hgt = b.n ? Math.max(2, (Math.log1p(b.n) / Math.log1p(mx)) * (r.height - 18)) : 0;
        ctx.fillStyle = U.rgbCss(S.histPick === i ? U.shade(rgb, 1.5) : rgb);
        ctx.fillRect(i * bw, r.height - 14 - hgt, Math.max(1, bw - 1), hgt);
    });
    ctx.fillStyle = '#9aa0aa';
    ctx.fillText(U.fmtNs(bars[0].lo), 2, r.height - 4);
    const last = U.fmtNs(bars[bars.length - 1].hi);
    ctx.fillText(last, r.width - ctx.measureText(last).width - 2, r.height - 4);
    document.getElementById('find-info').textContent = locLabel(S.histLoc) + ': ' + U.fmtCount(S.hist.count) +
        ' zones, total ' + U.fmtNs(S.hist.total) + ', mean ' + U.fmtNs(S.hist.total / S.hist.count) + ', min ' +
        U.fmtNs(S.hist.min) + ', max ' + U.fmtNs(S.hist.max) + ' (log count; click a bar to list its zones)';
    setStatus('histBars', bars.filter((b) => b.n).length);
    setStatus('histCount', S.hist.count);
    cv.onclick = (e) => {
        const i = Math.max(0, Math.min(bars.length - 1, Math.floor(((e.clientX - r.left) / r.width) * bars.length)));
        S.histPick = i;
        api('/api/instances?loc=' + S.histLoc + '&dmin=' + bars[i].lo + '&dmax=' + bars[i].hi + '&limit=200')
            .then((res) => { S.inst = res; drawHist(); showInstances(); })
            .catch(() => { S.errors++; setStatus('errors', S.errors); });
    };
}

function showInstances() {
    const list = document.getElementById('instances');
    if (!list || !S.inst) return;
    list.textContent = '';
    const a = S.inst.i, rows = [];
    for (let i = 0; i < a.length; i += 4)
        rows.push([U.fmtNs(a[i + 1] - a[i]), U.fmtTs(a[i], 1000), trackLabel(trackById(a[i + 2])), a[i + 3]]);
    list.appendChild(U.el('div', { class: 'dim', text: U.fmtCount(S.inst.matched) + ' zones in this bar' +
        (S.inst.matched > rows.length ? ', the ' + rows.length + ' longest shown' : '') + '; click one to go to it' }));
    list.appendChild(table(['duration', 'start', 'track', 'depth'], rows, (k) => {
        const s = a[4 * k], e = a[4 * k + 1];
        zoomTo(s, e);
        S.selZone = { s: s, e: e, loc: S.histLoc, self: 0, track: a[4 * k + 2], depth: a[4 * k + 3] };
        setStatus('selected', loc(S.histLoc)[0]);
        setStatus('jumped', Math.floor(s));
        document.getElementById('zone-detail').textContent = loc(S.histLoc)[0] + '  ' + U.fmtNs(e - s) + '  at ' + U.fmtTs(s, 1000);
    }));
    setStatus('instances', rows.length);
}

/* The zone figures of the selected range, the view or a section, as `mprof report` defines them
 * (analysis/site_stats.h): the zones that start and end inside, recursion counted once. */
function panelStats(p) {
    const rg = S.selRange || [S.view.t0, S.view.t1];
    const head = U.el('div', { class: 'panel-head' });
    const sets = S.meta.frame_sets || [];
    const section = S.statsSet !== undefined && S.statsSet !== null ? sets.find((f) => f.set === S.statsSet) : null;
    head.appendChild(U.el('span', { text: section ? 'Zones inside the frames of "' + section.name + '" (' + U.fmtCount(section.count) + ' frames)'
        : 'Zones inside ' + U.fmtTs(rg[0], 1000) + ' .. ' + U.fmtTs(rg[1], 1000) + ' (' + U.fmtNs(rg[1] - rg[0]) + ')' +
        (S.selRange ? '' : ', the view; shift+drag selects a range') }));
    const useView = U.el('button', { text: 'Use view' });
    useView.addEventListener('click', () => { S.selRange = null; S.statsSet = null; showTab(); drawTimeline(); });
    const whole = U.el('button', { text: 'Whole capture' });
    whole.addEventListener('click', () => { S.selRange = [S.meta.start_ns - 1, S.meta.end_ns + 1]; S.statsSet = null; showTab(); });
    head.appendChild(useView);
    head.appendChild(whole);
    if (sets.length > 1) {
        const pick = U.el('select', { id: 'stats-set' });
        pick.appendChild(U.el('option', { value: '', text: 'a section...' }));
        for (const f of sets) pick.appendChild(U.el('option', { value: String(f.set), text: f.name + (f.main ? ' (main frames)' : '') }));
        pick.value = section ? String(section.set) : '';
        pick.addEventListener('change', () => { S.statsSet = pick.value === '' ? null : +pick.value; showTab(); });
        head.appendChild(pick);
    }
    p.appendChild(head);
    const body = U.el('div', { text: 'loading...' });
    p.appendChild(body);
    const q = section ? 't0=' + (S.meta.start_ns - 1) + '&t1=' + (S.meta.end_ns + 1) + '&set=' + section.set
        : 't0=' + Math.floor(rg[0]) + '&t1=' + Math.max(Math.ceil(rg[1]), Math.floor(rg[0]) + 1);
    /* The query asked, beside its answer's figures, so that a test that waits for rows can say
     * which range it got. */
    setStatus('statsQuery', q);
    api('/api/stats?' + q).then((st) => {
        S.stats = st;
        /* Async spans: a row per track (the report's async[]) and one per span name of a track. */
        const trackName = (id) => (trackById(id) || { name: '?' }).name;
        const rows = st.rows.map((r) => [r, '']).concat((st.gpu_rows || []).map((r) => [r, 'gpu']))
            .concat((st.async_tracks || []).map((r) => [r, 'track'])).concat((st.async_rows || []).map((r) => [r, 'async']))
            .sort((a, b) => b[0][2] - a[0][2]);
        const label = (r, k) => k === 'track' ? trackName(r[0]) + ' (async track, every span)'
            : k === 'async' ? loc(r[0])[0] + ' (' + loc(r[0])[1] + ')' : locLabel(r[0]) + (k === 'gpu' ? ' (GPU)' : '');
        body.textContent = '';
        body.appendChild(U.el('div', { class: 'dim', text: U.fmtCount(st.zones) + ' zones' + (st.whole ? ' (the whole capture: the figures of mprof report)' : '') +
            (st.frames ? '; ' + U.fmtCount(st.frames) + ' main frames inside' : '') + '. Total counts recursion once; %frames is the time inside the main frames over their span.' }));
        body.appendChild(table(['zone', 'count', 'total', 'self', 'mean', 'p50', 'p95', 'min', 'max', '%frames', 'per frame'],
            rows.map(([r, k]) => [label(r, k), U.fmtCount(r[1]), U.fmtNs(r[2]), U.fmtNs(r[3]), U.fmtNs(r[6]),
                U.fmtNs(r[7]), U.fmtNs(r[8]), U.fmtNs(r[4]), U.fmtNs(r[5]),
                /* Spans of a track overlap: their share of frame time is no share (it passes 100 %). */
                st.span_ns > 0 && k !== 'track' && k !== 'async' ? (100 * r[9] / st.span_ns).toFixed(1) + ' %' : '-',
                st.frames ? U.fmtNs(r[9] / st.frames) : '-']),
            (k) => { if (rows[k][1] !== 'track') findZone(rows[k][0][0]); }));
        setStatus('statsRows', rows.length);
        setStatus('statsAsync', (st.async_tracks || []).map((r) => trackName(r[0]) + ':' + r[1]).join('|'));
        setStatus('statsZones', st.zones);
        setStatus('statsWhole', st.whole ? 1 : 0);
    }).catch(() => { S.errors++; setStatus('errors', S.errors); });
}

function panelMessages(p) {
    const m = S.msgs ? S.msgs.m : [];
    p.appendChild(U.el('div', { class: 'dim', text: U.fmtCount(S.msgs ? S.msgs.in_range : 0) + ' messages in the view (' +
        U.fmtCount(S.meta.messages) + ' in the capture); click one to go to it' }));
    p.appendChild(table(['time', 'level', 'text'], m.map((x) => [U.fmtTs(x[0], 1000), U.LEVEL_NAMES[x[1]] || x[1], x[3]]),
        (k) => { const t = m[k][0]; setView(t - 1e6, t + 1e6); }));
}

function panelInfo(p) {
    const c = S.meta.capture;
    p.appendChild(table(['', ''], [['file', c.file], ['application', c.app || ''], ['duration', U.fmtNs(c.duration_ns)],
        ['zones', U.fmtCount(c.zones)], ['events', U.fmtCount(c.events)], ['lost events', U.fmtCount(c.lost_events)],
        ['complete', c.complete ? 'yes' : 'no (the capture was cut off)'], ['timer', c.timer || ''],
        ['frames', U.fmtCount(S.meta.frames.count)], ['threads', c.threads]]));
}

function showTab() {
    const tabs = document.getElementById('tabs'), p = document.getElementById('panel');
    tabs.textContent = '';
    const all = Object.assign({ find: ['Find zone', panelFind], stats: ['Statistics', panelStats],
        messages: ['Messages', panelMessages], info: ['Info', panelInfo] }, S.panels);
    for (const k in all) {
        const b = U.el('button', { text: all[k][0], 'data-tab': k, class: S.tab === k ? 'active' : '' });
        b.addEventListener('click', () => { S.tab = k; showTab(); });
        tabs.appendChild(b);
    }
    p.textContent = '';
    (all[S.tab] || all.find)[1](p);
    setStatus('tab', S.tab);
    if (document.body.dataset.tab !== S.tab) {
        /* serve.css gives some tabs more room: the timeline is drawn again at its new size. */
        document.body.dataset.tab = S.tab;
        if (S.meta) requestAnimationFrame(() => drawTimeline());
    }
}

/* ---- start ----------------------------------------------------------------------------------- */

function loadFrames() {
    return S.loadFrames ? S.loadFrames() : Promise.resolve();
}

window.MPROF_SERVE = {
    state: S,
    setView: setView,
    findZone: findZone,
    histBarRect: histBarRect,
    addTrackPainter: (fn) => S.painters.push(fn),
    /* For scripts that ask their own queries (panels.js): the counted fetch, a redraw of the
     * timeline from what is loaded, the tabs again. */
    api: api,
    zoomTo: (s0, e0) => zoomTo(s0, e0),
    loadFrames: () => loadFrames(),
    /* Reloads everything the page shows of the capture (compare.js switches captures). */
    reload: () => api('/api/meta').then((m) => {
        /* Another capture: nothing of the last one's (its source location slots differ) stays. */
        S.meta = null; S.zones = null; S.plots = null; S.msgs = null; S.stats = null; S.hist = null; S.inst = null;
        S.histLoc = -1; S.hilite = -1; S.selZone = null; S.selRange = null; S.statsSet = null; S.collapsedProc = {};
        applyMeta(m); showTab(); return loadFrames();
    }).then(() => setView(S.meta.start_ns, S.meta.end_ns || 1, true)),
    redraw: () => drawTimeline(),
    showTab: () => showTab(),
    addPanel: (key, title, fn) => { S.panels[key] = [title, fn]; if (S.meta) showTab(); },
    /* Center of a drawn zone in page coordinates, for tests and scripts. */
    zoneRect: (name) => {
        if (!S.zones) return null;
        const w = tlSize().w, r = tl.getBoundingClientRect();
        for (const lv of S.zones.levels) {
            const row = rowOf(lv.track, lv.depth);
            if (!row) continue;
            for (let i = 0; i < lv.z.length; i += 4) {
                if (name && loc(lv.z[i + 2])[0] !== name) continue;
                const x0 = Math.max(0, xOf(lv.z[i], w)), x1 = Math.min(w, xOf(lv.z[i + 1], w));
                const y = row.y - S.scrollY + ROW / 2;
                if (x1 - x0 >= 4 && y > RULER && y < r.height)
                    return { x: r.left + (x0 + x1) / 2, y: r.top + y };
            }
        }
        return null;
    },
};

function applyMeta(m) {
    const known = S.meta ? S.order : [];
    S.meta = m;
    /* Keep the user's order of known tracks; new ones (a live capture's) come after. */
    S.order = known.filter((id) => m.tracks.some((t) => t.id === id))
        .concat(m.tracks.map((t) => t.id).filter((id) => !known.includes(id)));
    document.getElementById('title').textContent = m.capture.file;
    document.getElementById('summary').textContent = (m.capture.app || '') + '  ' + U.fmtNs(m.capture.duration_ns) +
        '  ' + U.fmtCount(m.capture.zones) + ' zones  ' + U.fmtCount(m.frames.count) + ' frames' +
        (S.live ? (S.live.capturing ? '  (live)' : '  (capture ended)') : '');
    setStatus('zones', m.capture.zones);
    setStatus('tracks', m.tracks.length);
    setStatus('trackNames', S.order.map((id) => trackById(id).name).join('|'));
    const kinds = {};
    for (const t of m.tracks) kinds[t.kind] = (kinds[t.kind] || 0) + 1;
    setStatus('trackKinds', Object.keys(kinds).map((k) => k + ':' + kinds[k]).join(','));
    setStatus('frames', m.frames.count);
    setStatus('plots', m.plots.length);
    setStatus('messages', m.messages);
}

/* A live capture: poll the server; on a new index, new metadata and frames, and the view follows
 * the end of the capture (the last 3 s, or the whole) until the user moves it (Home follows
 * again). */
S.follow = true;
function followView() {
    const span = Math.min(S.meta.end_ns - S.meta.start_ns, 3e9);
    S.view = { t0: S.meta.end_ns - span, t1: S.meta.end_ns };
    setView(S.meta.end_ns - span, S.meta.end_ns, true);
}

/* S.live is the state whose metadata and frames the page shows: it changes only once they are
 * applied, so a failed fetch is retried at the next poll, and "ended" (data-live) is written only
 * with the finished capture's metadata (the server says the capture ended only once its final
 * index is served). Polling stops after that. */
function pollLive() {
    let done = false;
    api('/api/live').then((l) => {
        setStatus('generation', l.generation);
        const a = S.live;
        if (a && l.generation === a.generation && l.capturing === a.capturing) { done = !l.capturing; return null; }
        return api('/api/meta').then((m) => {
            S.live = l;
            applyMeta(m);
            return loadFrames();
        }).then(() => {
            setStatus('live', l.capturing ? 'capturing' : 'ended');
            done = !l.capturing;
            if (S.follow) followView(); else refresh();
        }).catch((e) => {
            S.live = a; /* not applied: the next poll fetches it again */
            setStatus('liveRetry', String(e.message || e));
        });
    }).catch(() => {}).finally(() => { if (!done) setTimeout(pollLive, 700); });
}

function start(tries) {
    api('/api/meta').then((m) => {
        applyMeta(m);
        initInput();
        showTab();
        const hm = /view=(-?\d+):(-?\d+)/.exec(location.hash);
        return loadFrames().then(() => {
            if (hm) { S.follow = false; setView(+hm[1], +hm[2]); }
            else setView(m.start_ns, m.end_ns || 1, true);
            setStatus('state', 'ok');
            if (S.live && S.live.live) pollLive();
        });
    }).catch((e) => {
        /* A live server answers 503 until the process sends its first events. */
        if (S.live && S.live.live && tries < 600) {
            document.getElementById('summary').textContent = 'waiting for the process...';
            setTimeout(() => start(tries + 1), 500);
            return;
        }
        setStatus('state', 'error');
        setStatus('error', String(e.message || e));
        document.getElementById('summary').textContent = 'cannot load: ' + (e.message || e);
    });
}

api('/api/live').then((l) => { S.live = l.live ? l : null; if (S.live) S.live.generation = -1; })
    .catch(() => {}).finally(() => start(0));
