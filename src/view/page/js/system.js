/*
 * system.js - system tracing in the viewer (docs/SYSTEM.md): the data document's "system"
 * object becomes
 *   - a thread-state strip along the bottom of every thread track's header: green while the
 *     thread ran, orange while it was preempted (runnable, another task on its CPU), blue-grey
 *     while it was blocked (sleep, lock, I/O), violet while it yielded (sched_yield; only with
 *     the sched tracepoints), grey outside the traced range; the tooltip names who woke it;
 *   - two plots, "CPU: other processes" and "CPU: this process" (percent of the machine);
 *   - a "Samples" tab: a flame graph (icicle, root on top) of the callstack samples of the
 *     selected range, one node per function on each call path, as wide as its samples.
 * Hooks elsewhere are one line each: Data.decode calls SystemView.decode, Timeline.drawTrack
 * calls SystemView.drawStrip, and the App adds the tab and forwards its range.
 */
'use strict';

const SystemView = {
    COLORS: { run: '#3f9f5a', preempted: '#e0a030', blocked: '#5a6b8a', yielded: '#9a6ac8', unknown: '#8a8a8a' },
    REASONS: ['off CPU', 'preempted', 'blocked', 'yielded'],

    color(why) {
        const C = SystemView.COLORS;
        return why === 1 ? C.preempted : why === 2 ? C.blocked : why === 3 ? C.yielded : C.unknown;
    },

    /* Adds D.system (per-tid timelines, samples) and the CPU plots to D. */
    decode(raw, D) {
        const s = raw.system;
        if (!s) return;
        const sys = {
            on: !!s.context_switches, cpu: !!s.cpu_usage, sampling: !!s.sampling, hz: s.hz || 0,
            whyNot: s.why_not || null, byTid: new Map(), samples: null, functions: s.functions || [],
            wakers: s.wakers || []
        };
        for (const t of s.threads || []) {
            const off = t.off || [];
            const n = Math.floor(off.length / 3);
            const os = new Float64Array(n), oe = new Float64Array(n), why = new Uint8Array(n);
            let prev = 0;
            for (let i = 0; i < n; i++) {
                prev += off[3 * i];
                os[i] = prev;
                oe[i] = prev + off[3 * i + 1];
                why[i] = off[3 * i + 2];
            }
            const wk = Int32Array.from(t.wk && t.wk.length === n ? t.wk : new Array(n).fill(-1));
            sys.byTid.set(t.tid, { start: t.start, end: t.end, os: os, oe: oe, why: why, wk: wk, n: n });
        }
        const c = s.cpu;
        if (c && c.ts && c.ts.length) {
            const ts = Data.undelta(c.ts);
            const add = (name, vals, rgb) => {
                const v = Float64Array.from(vals || []);
                if (v.length !== ts.length) return;
                let lo = Infinity, hi = -Infinity;
                for (const x of v) {
                    if (x < lo) lo = x;
                    if (x > hi) hi = x;
                }
                D.plots.push({ name: name, format: 3, style: 2, rgb: rgb, ts: ts, v: v, n: v.length, min: lo, max: hi });
            };
            add('CPU: other processes', c.other, 0xd05050);
            add('CPU: this process', c.self, 0x50a050);
        }
        const sm = s.samples;
        if (sm && sm.ts && sm.ts.length) {
            sys.samples = { ts: Data.undelta(sm.ts), tid: sm.tid || [], stack: sm.stack || [], n: sm.ts.length, leftOut: sm.left_out || 0 };
        }
        D.system = sys;
    },

    /* The state strip of track t, under its header row at y. */
    drawStrip(tl, ctx, t, y, W) {
        const sys = tl.D.system;
        if (!sys || !sys.on || t.kind !== 'thread') return;
        const e = sys.byTid.get(t.tid);
        if (!e) return;
        const H = 3, sy = y + tl.HEADER - H;
        const x = (v) => Math.max(0, Math.min(W, tl.x(v)));
        ctx.fillStyle = SystemView.COLORS.unknown;
        ctx.fillRect(0, sy, W, H);
        const a = Math.max(e.start, tl.v0), b = Math.min(e.end, tl.v1);
        if (b <= a) return;
        ctx.fillStyle = SystemView.COLORS.run;
        ctx.fillRect(x(a), sy, Math.max(1, x(b) - x(a)), H);
        let i = U.upperBound(e.oe, tl.v0);
        for (; i < e.n && e.os[i] <= tl.v1; i++) {
            const x0 = x(e.os[i]), x1 = x(e.oe[i]);
            ctx.fillStyle = SystemView.color(e.why[i]);
            ctx.fillRect(x0, sy, Math.max(0.5, x1 - x0), H);
        }
    },

    /* What the strip says at time ts for track t, for tooltips ('' when nothing). */
    stateAt(D, t, ts) {
        const sys = D.system;
        const e = sys && sys.byTid.get(t.tid);
        if (!e || ts < e.start || ts > e.end) return '';
        const i = U.upperBound(e.os, ts) - 1;
        if (i >= 0 && ts < e.oe[i]) {
            const what = SystemView.REASONS[e.why[i]] || 'off CPU';
            const w = e.wk[i] >= 0 ? sys.wakers[e.wk[i]] : null;
            return w ? what + ', woken by ' + SystemView.wakerName(D, w) : what;
        }
        return 'running';
    },

    /* A waker in words: a thread track's name when it is one of ours, else its OS name. */
    wakerName(D, w) {
        if (w.context !== 'task') return 'an interrupt (' + w.context + ')';
        const own = (D.tracks || []).find((t) => t.kind === 'thread' && t.tid === w.tid);
        const name = own ? own.name : (w.name || 'tid ' + w.tid);
        return own ? name : name + ' (pid ' + w.pid + ', tid ' + w.tid + ')';
    }
};

/* The "Samples" tab: a flame graph of the samples of a range. */
class SampleFlame {
    constructor(D, pane, tooltip) {
        this.D = D;
        this.tip = tooltip;
        this.ROW = 18;
        this.head = U.el('div', { class: 'dim' });
        this.canvas = U.el('canvas', { id: 'sample-flame' });
        pane.appendChild(this.head);
        pane.appendChild(this.canvas);
        this.boxes = [];
        this.root = null;
        U.hoverTip(this);
    }

    setRange(t0, t1) {
        const s = this.D.system.samples, names = this.D.system.functions;
        const root = { name: 'all samples', count: 0, children: new Map() };
        if (s) {
            let i = U.lowerBound(s.ts, t0);
            for (; i < s.n && s.ts[i] <= t1; i++) {
                let n = root;
                n.count++;
                for (const f of s.stack[i] || []) {
                    let c = n.children.get(f);
                    if (!c) {
                        c = { name: names[f] || '?', count: 0, children: new Map() };
                        n.children.set(f, c);
                    }
                    c.count++;
                    n = c;
                }
            }
        }
        this.root = root;
        const sys = this.D.system;
        this.head.textContent = U.fmtCount(root.count) + ' samples in the range' + (sys.hz ? ' at ' + sys.hz + ' Hz of CPU time' : '') +
            (s && s.leftOut ? ' (' + U.fmtCount(s.leftOut) + ' samples beyond the embedded limit left out)' : '') +
            (!sys.sampling ? ' \u2014 sampling was off: ' + (sys.whyNot || 'MPROF_SAMPLE_HZ=N turns it on') : '');
        this.draw();
    }

    draw() {
        const root = this.root;
        this.boxes = U.drawIcicle(this.canvas, root, {
            row: this.ROW,
            below: 8,
            empty: 'No samples in this range.',
            weight: (n) => n.count,
            rgb: (n) => (n === root ? 0x555a64 : U.zoneRgb(0, n.name)),
            label: (n) => n.name + ' ' + n.count,
        }).boxes;
    }

    hover(ev) {
        const r = this.canvas.getBoundingClientRect();
        const x = ev.clientX - r.left, y = ev.clientY - r.top;
        const b = this.boxes.find((q) => x >= q.x && x < q.x + q.w && y >= q.y && y < q.y + this.ROW);
        if (!b) {
            this.tip.style.display = 'none';
            return;
        }
        const pct = (100 * b.node.count / this.root.count).toFixed(1);
        U.showTip(this.tip, ev, '<b>' + U.escapeHtml(b.node.name) + '</b><br>' + U.fmtCount(b.node.count) + ' samples (' + pct + ' %)');
    }
}
