/*
 * panels.js - system tracing, locks and memory on the served page (docs/VIEW.md), through the
 * hooks serve.js exposes (MPROF_SERVE.addTrackPainter, addPanel):
 *   - a thread-state strip along the bottom of every thread track's header, from /api/states
 *     (off-CPU runs merged per pixel by the server): green running, orange preempted, violet
 *     yielded (sched tracepoints only), blue-grey blocked, grey outside the traced range; a run that stands for several short switches is
 *     drawn as strong as its share of off time;
 *   - the CPU-usage plot (other processes and this one, percent of the machine) in its own strip
 *     under the plots, from /api/cpu (min/max per pixel);
 *   - a "Samples" tab: the flame graph of the callstack samples of the selected range (or the
 *     view), merged into a tree by the server (/api/samples), drawn by system.js's SampleFlame;
 *   - "Locks" (whole-capture figures and the waits and holds of the range, /api/locks) and
 *     "Memory" (per pool, and the use within the view from the memory plots) tabs.
 */
'use strict';

(function () {
    const M = window.MPROF_SERVE, S = M.state;
    const status = document.getElementById('mprof-status');
    const set = (k, v) => { status.dataset[k] = String(v); };
    const fail = (e) => { S.errors++; set('errors', S.errors); set('lastError', 'panels: ' + (e.message || e)); };
    const HEAD = 18, STRIP = 4, CPU_H = 44;
    const P = { info: null, gen: null, states: null, cpu: null, key: '', inflight: false, again: false };

    const cpuCv = U.el('canvas', { id: 'cpu-plot' });
    cpuCv.style.cssText = 'display:none;width:100%;flex:none;border-top:1px solid #333';
    document.getElementById('plots').after(cpuCv);

    function loadInfo() {
        const gen = S.live ? S.live.generation : 0;
        if (P.gen === gen) return;
        P.gen = gen;
        M.api('/api/system').then((info) => {
            P.info = info;
            set('system', info.system ? 'on' : 'off');
            set('stateThreads', info.threads.filter((t) => t.track !== null).length);
            set('cpuPoints', info.cpu_points);
            set('samples', info.samples);
            P.key = '';
            M.redraw();
            if (S.tab === 'locks' || S.tab === 'memory' || S.tab === 'samples') M.showTab();
        }).catch(fail);
    }

    /* The strips and the CPU plot of the view: asked again when the view or width changed. */
    function want(w) {
        if (!P.info || !P.info.system) return;
        const t0 = Math.floor(S.view.t0), t1 = Math.max(Math.ceil(S.view.t1), t0 + 1);
        const key = 't0=' + t0 + '&t1=' + t1 + '&w=' + Math.max(1, Math.round(w));
        if (key === P.key) return;
        if (P.inflight) { P.again = true; return; }
        P.inflight = true;
        P.key = key;
        Promise.all([M.api('/api/states?' + key), P.info.cpu_points ? M.api('/api/cpu?' + key) : Promise.resolve(null)])
            .then(([st, cpu]) => {
                P.states = st;
                P.cpu = cpu;
                set('stateRuns', st.runs);
                set('stateIntervals', st.intervals);
                set('statesView', key);
                M.redraw();
            })
            .catch(fail)
            .finally(() => { P.inflight = false; if (P.again) { P.again = false; M.redraw(); } });
    }

    function paintStrips(ctx, o) {
        loadInfo();
        want(o.w);
        drawCpu(o);
        if (!P.states) return;
        const byTrack = new Map();
        for (const t of P.states.threads) if (t.track !== null) byTrack.set(t.track, t);
        let strips = 0;
        const C = SystemView.COLORS;
        const cx = (t) => Math.max(-1, Math.min(o.w + 1, o.xOf(t)));
        for (const r of o.rows) {
            if (r.depth !== -1) continue;
            const t = byTrack.get(r.track);
            if (!t) continue;
            const y = r.y + HEAD - STRIP;
            ctx.globalAlpha = 1;
            ctx.fillStyle = C.unknown;
            ctx.fillRect(0, y, o.w, STRIP);
            const a = cx(t.start), b = cx(t.end);
            if (b > a) {
                ctx.fillStyle = C.run;
                ctx.fillRect(a, y, Math.max(1, b - a), STRIP);
            }
            const rr = t.r;
            for (let i = 0; i < rr.length; i += 4) {
                const x0 = cx(rr[i]), x1 = cx(rr[i + 1]);
                ctx.globalAlpha = rr[i + 3] >= 1000 ? 1 : Math.max(0.3, rr[i + 3] / 1000);
                ctx.fillStyle = rr[i + 2] === 1 ? C.preempted : rr[i + 2] === 2 ? C.blocked : rr[i + 2] === 3 ? (C.yielded || C.unknown) : C.unknown;
                ctx.fillRect(x0, y, Math.max(1, x1 - x0), STRIP);
            }
            ctx.globalAlpha = 1;
            strips++;
        }
        set('stateStrips', strips);
    }

    function drawCpu(o) {
        if (!P.cpu || !P.info || !P.info.cpu_points) return;
        cpuCv.style.display = 'block';
        const w = o.w, ctx = U.fitCanvas(cpuCv, w, CPU_H, true);
        ctx.fillStyle = '#1b1c1f';
        ctx.fillRect(0, 0, w, CPU_H);
        const p = P.cpu.p, yv = (v) => CPU_H - 3 - (Math.max(0, Math.min(100, v)) / 100) * (CPU_H - 8);
        let mo = 0, ms = 0, n = 0;
        const line = (col, lo, hi) => {
            ctx.strokeStyle = col;
            ctx.beginPath();
            for (let i = 0; i < p.length; i += 5) {
                const x = o.xOf(p[i]);
                if (i === 0) ctx.moveTo(x, yv(p[i + hi]));
                else ctx.lineTo(x, yv(p[i + hi]));
                if (p[i + lo] !== p[i + hi]) ctx.lineTo(x, yv(p[i + lo]));
            }
            ctx.stroke();
        };
        for (let i = 0; i < p.length; i += 5) {
            if (p[i] < S.view.t0 || p[i] > S.view.t1) continue;
            mo = Math.max(mo, p[i + 2]);
            ms = Math.max(ms, p[i + 4]);
            n++;
        }
        line(U.rgbCss(0xd05050), 1, 2);
        line(U.rgbCss(0x50a050), 3, 4);
        ctx.font = '11px system-ui, sans-serif';
        /* The label sits on a dark box, so the curves never run over it. */
        const say = (text) => {
            ctx.fillStyle = 'rgba(20,21,24,0.82)';
            ctx.fillRect(3, 4, ctx.measureText(text).width + 6, 14);
            ctx.fillStyle = '#cfd3da';
            ctx.fillText(text, 6, 11);
        };
        if (!n) {
            /* No sample inside the view (one per 100 ms): say so, with the ones around it. */
            for (let i = 0; i < p.length; i += 5) { mo = Math.max(mo, p[i + 2]); ms = Math.max(ms, p[i + 4]); }
            say('CPU: no sample inside the view (one per 100 ms); the samples around it: other processes (red) ' +
                (p.length ? mo.toFixed(0) + ' %' : 'none') + ', this process (green) ' + (p.length ? ms.toFixed(0) + ' %' : 'none'));
        } else {
            say('CPU: other processes (red) max ' + mo.toFixed(0) + ' %, this process (green) max ' + ms.toFixed(0) +
                ' % of the machine');
        }
        set('cpuDrawn', n);
    }

    M.addTrackPainter(paintStrips);

    /* Hovering a strip says the thread's state there (after serve.js's own tooltip handler). */
    const tl = document.getElementById('timeline');
    tl.addEventListener('mousemove', (e) => {
        if (!P.states || e.buttons) return;
        const r = tl.getBoundingClientRect(), x = e.clientX - r.left, y = e.clientY - r.top + S.scrollY;
        const row = S.rows.find((q) => q.depth === -1 && y >= q.y + HEAD - STRIP - 1 && y < q.y + HEAD + 1);
        const t = row && P.states.threads.find((q) => q.track === row.track);
        if (!t) return;
        const ts = S.view.t0 + (x / r.width) * (S.view.t1 - S.view.t0);
        let what = ts < t.start || ts > t.end ? 'not traced' : 'running';
        for (let i = 0; i < t.r.length; i += 4)
            if (ts >= t.r[i] && ts < t.r[i + 1]) {
                const why = t.r[i + 2] === 1 ? 'preempted' : t.r[i + 2] === 2 ? 'blocked' : t.r[i + 2] === 3 ? 'yielded' : 'off the CPU';
                what = t.r[i + 3] >= 1000 ? why + ' for ' + U.fmtNs(t.r[i + 1] - t.r[i])
                    : 'off the CPU ' + (t.r[i + 3] / 10).toFixed(0) + ' % of this pixel (mostly ' + why + ')';
                break;
            }
        const tip = document.getElementById('tooltip');
        tip.textContent = 'thread ' + t.tid + ': ' + what + ' at ' + U.fmtTs(ts, 1000);
        tip.style.display = 'block';
        tip.style.left = Math.min(e.clientX + 14, window.innerWidth - 420) + 'px';
        tip.style.top = (e.clientY + 14) + 'px';
        set('stateTip', what.split(' ')[0]);
    });

    function rangeOf() {
        const rg = S.selRange || [S.view.t0, S.view.t1];
        const t0 = Math.floor(rg[0]);
        return { t0: t0, t1: Math.max(Math.ceil(rg[1]), t0 + 1), sel: !!S.selRange };
    }
    function rangeText(rg) {
        return U.fmtTs(rg.t0, 1000) + ' .. ' + U.fmtTs(rg.t1, 1000) + ' (' + U.fmtNs(rg.t1 - rg.t0) + ')' +
            (rg.sel ? '' : ', the view; shift+drag selects a range');
    }
    function grid(head, rows) {
        const t = U.el('table', { class: 'grid' });
        t.appendChild(U.el('tr', null, head.map((h) => U.el('th', { text: h }))));
        for (const r of rows) t.appendChild(U.el('tr', null, r.map((c) => U.el('td', { text: String(c) }))));
        return t;
    }

    /* Samples: the server's nodes [parent, name id, count] become SampleFlame's tree. */
    M.addPanel('samples', 'Samples', (p) => {
        const rg = rangeOf();
        if (!P.info) { p.textContent = 'loading...'; return; }
        /* One thread or all of them. */
        const pick = U.el('select', { id: 'flame-thread' });
        pick.appendChild(U.el('option', { value: '', text: 'all threads' }));
        for (const t of P.info.threads) {
            const tr = t.track !== null && S.meta.tracks.find((k) => k.id === t.track);
            if (tr) pick.appendChild(U.el('option', { value: String(t.track), text: tr.name }));
        }
        pick.value = P.flameTrack || '';
        pick.addEventListener('change', () => { P.flameTrack = pick.value; M.showTab(); });
        p.appendChild(pick);
        const fl = new SampleFlame({ system: { samples: null, functions: [] } }, p, document.getElementById('tooltip'));
        fl.head.textContent = 'loading samples of ' + rangeText(rg) + '...';
        const tq = P.flameTrack ? '&track=' + P.flameTrack : '';
        M.api('/api/samples?t0=' + rg.t0 + '&t1=' + rg.t1 + tq).then((a) => {
            const root = { name: 'all samples', count: a.samples, children: new Map() };
            const nodes = [];
            for (let i = 0; i < a.n.length; i += 3) {
                const n = { name: a.names[a.n[i + 1]] || '?', count: a.n[i + 2], children: new Map() };
                (a.n[i] < 0 ? root : nodes[a.n[i]]).children.set(a.n[i + 1], n);
                nodes.push(n);
            }
            fl.root = root;
            fl.draw();
            const info = P.info;
            fl.head.textContent = U.fmtCount(a.samples) + ' samples in ' + rangeText(rg) +
                (info.hz ? ' at ' + info.hz + ' Hz of CPU time' : '') +
                (a.hidden_samples ? '; ' + U.fmtCount(a.hidden_samples) + ' in call paths narrower than 1/4000 not drawn' : '') +
                (!info.sampling ? ' \u2014 sampling was off: ' + (info.why_not || 'MPROF_SAMPLE_HZ=N turns it on') : '');
            set('flameSamples', a.samples);
            set('flameNodes', a.shown);
            set('flameTrack', P.flameTrack || '');
            set('flameRange', rg.t0 + ':' + rg.t1 + tq);
        }).catch(fail);
    });

    M.addPanel('locks', 'Locks', (p) => {
        const rg = rangeOf();
        if (!P.info) { p.textContent = 'loading...'; return; }
        const locks = P.info.locks;
        if (!locks.length) { p.textContent = 'No lock events in this capture (MPROF_LOCK_*).'; set('lockRows', 0); return; }
        p.appendChild(U.el('div', { class: 'dim', text: 'Whole capture' }));
        p.appendChild(grid(['lock', 'acquisitions', 'contended', 'failed tries', 'wait', 'max wait', 'hold', 'max hold', 'threads'],
            locks.map((l) => [l.name, U.fmtCount(l.acquisitions), U.fmtCount(l.contended), U.fmtCount(l.try_failed),
                U.fmtNs(l.wait_ns), U.fmtNs(l.max_wait_ns), U.fmtNs(l.hold_ns), U.fmtNs(l.max_hold_ns), l.threads])));
        const body = U.el('div', { text: 'loading...' });
        p.appendChild(U.el('div', { class: 'dim', text: 'Contention in ' + rangeText(rg) + ' (spans that start in it)' }));
        p.appendChild(body);
        M.api('/api/locks?t0=' + rg.t0 + '&t1=' + rg.t1).then((a) => {
            body.textContent = '';
            let waits = 0;
            body.appendChild(grid(['lock', 'waits', 'wait', 'max wait', 'wait share', 'holds', 'hold', 'max hold'],
                a.locks.map((l) => {
                    waits += l.waits;
                    const name = (locks.find((k) => k.lock === l.lock) || { name: 'lock' }).name;
                    return [name, U.fmtCount(l.waits), U.fmtNs(l.wait_ns), U.fmtNs(l.max_wait_ns),
                        (100 * l.wait_ns / Math.max(1, rg.t1 - rg.t0)).toFixed(2) + ' %', U.fmtCount(l.holds),
                        U.fmtNs(l.hold_ns), U.fmtNs(l.max_hold_ns)];
                })));
            set('lockRows', a.locks.length);
            set('lockWaits', waits);
            set('lockRange', rg.t0 + ':' + rg.t1);
        }).catch(fail);
    });

    M.addPanel('memory', 'Memory', (p) => {
        if (!P.info) { p.textContent = 'loading...'; return; }
        const pools = P.info.pools;
        if (!pools.length) { p.textContent = 'No allocation events in this capture (MPROF_ALLOC / MPROF_FREE).'; set('memoryPools', 0); return; }
        /* The view's use of each pool, from the memory plots the page already has. */
        const inView = (name) => {
            const k = S.meta.plots.findIndex((pl) => pl.name === 'Memory: ' + name);
            if (k < 0 || !S.plots || !S.plots.plots[k]) return ['', ''];
            const a = S.plots.plots[k].p;
            let mn = Infinity, mx = -Infinity;
            for (let i = 0; i < a.length; i += 3) {
                if (a[i] < S.view.t0 || a[i] > S.view.t1) continue;
                mn = Math.min(mn, a[i + 1]);
                mx = Math.max(mx, a[i + 2]);
            }
            return mx >= mn ? [U.fmtBytes(mn), U.fmtBytes(mx)] : ['', ''];
        };
        p.appendChild(grid(['pool', 'allocations', 'frees', 'bytes allocated', 'peak', 'in use at end', 'live at end',
            'unknown frees', 'view: min', 'view: max'],
            pools.map((q) => [q.name, U.fmtCount(q.allocs), U.fmtCount(q.frees), U.fmtBytes(q.alloc_bytes), U.fmtBytes(q.peak_bytes),
                U.fmtBytes(q.end_bytes), U.fmtCount(q.live), U.fmtCount(q.bad_frees)].concat(inView(q.name)))));
        p.appendChild(U.el('div', { class: 'dim', text: 'The usage graph is the "Memory: POOL" plot under the tracks.' }));
        set('memoryPools', pools.length);
    });
})();
