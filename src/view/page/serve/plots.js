/*
 * plots.js - the served page's plot strip (docs/VIEW.md): the capture's plots and memory pools
 * under the timeline, in groups that fold. The tracks get the screen first: the strip takes at
 * most a third of the window and scrolls beyond, and when a capture has many series (the sample
 * engine has 13) every group starts folded to one line that names its series and their largest
 * value in view. Groups: "Memory" (the pools), then series that share a prefix ("Net: rtt",
 * "Net: bandwidth"), then the rest. A label sits on its own dark box, so a curve never runs over
 * it. Click a group's line to fold or unfold it.
 */
'use strict';

(function () {
    const M = window.MPROF_SERVE, S = M.state;
    const status = document.getElementById('mprof-status');
    const set = (k, v) => { status.dataset[k] = String(v); };
    const pc = document.getElementById('plots');
    const PLOT_H = 36, GROUP_H = 18, MANY = 4;
    const P = { groups: null, folded: {}, rows: [], key: '' };

    function prefixOf(name) {
        const m = /^(.+?)(::|:|\.|\/)\s*\S/.exec(name);
        return m ? m[1] : null;
    }

    /* The groups of the metadata's plots, in order: memory, shared prefixes, the rest. */
    function groups() {
        const plots = S.meta.plots;
        const key = plots.map((p) => p.name).join('\n');
        if (P.groups && P.key === key) return P.groups;
        const count = {};
        for (const p of plots) if (!p.memory) { const x = prefixOf(p.name); if (x) count[x] = (count[x] || 0) + 1; }
        const by = new Map();
        const add = (g, p) => { if (!by.has(g)) by.set(g, []); by.get(g).push(p); };
        for (const p of plots) {
            if (p.memory || p.name.startsWith('Memory: ')) add('Memory', p);
            else { const x = prefixOf(p.name); add(x && count[x] > 1 ? x : 'Plots', p); }
        }
        const order = Array.from(by.keys()).sort((a, b) => (a === 'Memory' ? -1 : b === 'Memory' ? 1 : a === 'Plots' ? 1 : b === 'Plots' ? -1 : a.localeCompare(b)));
        const fresh = P.key !== key;
        P.key = key;
        P.groups = order.map((g) => ({ name: g, plots: by.get(g) }));
        if (fresh && !Object.keys(P.folded).length && plots.length > MANY)
            for (const g of P.groups) P.folded[g.name] = true;
        return P.groups;
    }

    function seriesOf(pl) {
        if (!S.plots) return [];
        const sp = S.plots.plots.find((q) => q.id === pl.id);
        return sp ? sp.p : [];
    }

    function maxInView(p) {
        let mx = -Infinity;
        for (let i = 0; i < p.length; i += 3)
            if (p[i] >= S.view.t0 && p[i] <= S.view.t1 && p[i + 2] !== null && p[i + 2] > mx) mx = p[i + 2];
        return mx;
    }

    /* Text on a dark box: readable whatever the curve under it does. */
    function label(ctx, text, x, y, color) {
        const w = ctx.measureText(text).width;
        ctx.fillStyle = 'rgba(20,21,24,0.82)';
        ctx.fillRect(x - 3, y - 7, w + 6, 14);
        ctx.fillStyle = color;
        ctx.fillText(text, x, y);
    }

    S.drawPlots = () => {
        if (!S.meta) return;
        const gs = groups();
        const w = pc.getBoundingClientRect().width || document.getElementById('timeline').getBoundingClientRect().width;
        let h = 0;
        for (const g of gs) h += GROUP_H + (P.folded[g.name] ? 0 : g.plots.length * PLOT_H);
        const ctx = U.fitCanvas(pc, w, Math.max(1, h), true);
        pc.style.display = gs.length ? 'block' : 'none';
        ctx.fillStyle = '#1b1c1f';
        ctx.fillRect(0, 0, w, h);
        ctx.font = '11px system-ui, sans-serif';
        ctx.textBaseline = 'middle';
        const xOf = (t) => ((t - S.view.t0) / (S.view.t1 - S.view.t0)) * w;
        P.rows = [];
        let y = 0, shownRows = 0, folded = 0;
        for (const g of gs) {
            const isFolded = !!P.folded[g.name];
            folded += isFolded;
            ctx.fillStyle = '#26272b';
            ctx.fillRect(0, y, w, GROUP_H);
            const parts = g.plots.map((pl) => {
                const mx = maxInView(seriesOf(pl));
                return pl.name + (mx > -Infinity ? ' ' + U.fmtValue(mx, pl.format) : '');
            });
            ctx.fillStyle = '#cfd3da';
            ctx.fillText(U.fitText(ctx, (isFolded ? '\u25b6 ' : '\u25bc ') + g.name + ' (' + g.plots.length + ')' +
                (isFolded ? ':  ' + parts.join(',  ') : ''), w - 12, 6.2), 6, y + GROUP_H / 2);
            P.rows.push({ y: y, h: GROUP_H, group: g.name });
            y += GROUP_H;
            if (isFolded) continue;
            for (const pl of g.plots) {
                const p = seriesOf(pl), y0 = y;
                let mn = Infinity, mx = -Infinity;
                for (let i = 0; i < p.length; i += 3) {
                    if (p[i + 1] !== null && p[i + 1] < mn) mn = p[i + 1];
                    if (p[i + 2] !== null && p[i + 2] > mx) mx = p[i + 2];
                }
                if (!(mx >= mn)) { mn = 0; mx = 1; }
                if (mx === mn) mx = mn + 1;
                const yv = (v) => y0 + PLOT_H - 3 - ((v - mn) / (mx - mn)) * (PLOT_H - 8);
                ctx.strokeStyle = pl.color ? U.rgbCss(pl.color) : '#8fd0ff';
                ctx.beginPath();
                for (let i = 0; i < p.length; i += 3) {
                    const x = xOf(p[i]);
                    if (i === 0) ctx.moveTo(x, yv(p[i + 1]));
                    else ctx.lineTo(x, yv(p[i + 1]));
                    if (p[i + 2] !== p[i + 1]) ctx.lineTo(x, yv(p[i + 2]));
                }
                ctx.stroke();
                label(ctx, pl.name + '  ' + U.fmtValue(mx, pl.format), 8, y0 + 9, '#e8eaee');
                ctx.fillStyle = '#333';
                ctx.fillRect(0, y0 + PLOT_H - 1, w, 1);
                P.rows.push({ y: y0, h: PLOT_H, plot: pl.id });
                shownRows++;
                y += PLOT_H;
            }
        }
        set('plotGroups', gs.length);
        set('plotGroupsFolded', folded);
        set('plotRows', shownRows);
        const wrap = document.getElementById('plots-wrap');
        set('plotsHeight', Math.round(wrap ? wrap.getBoundingClientRect().height : h));
        set('timelineHeight', Math.round(document.getElementById('tl-wrap').getBoundingClientRect().height));
    };

    pc.addEventListener('click', (e) => {
        const r = pc.getBoundingClientRect(), y = e.clientY - r.top;
        const row = P.rows.find((q) => y >= q.y && y < q.y + q.h);
        if (!row || !row.group) return;
        P.folded[row.group] = !P.folded[row.group];
        S.drawPlots();
        window.dispatchEvent(new Event('resize')); /* the timeline takes the room back */
    });

    /* For tests: the center of a group's line in page coordinates. */
    M.plotGroupRect = (name) => {
        const row = P.rows.find((q) => q.group === name);
        if (!row) return null;
        const r = pc.getBoundingClientRect();
        return { x: r.left + 40, y: r.top + row.y + row.h / 2 };
    };
})();
