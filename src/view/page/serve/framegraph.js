/*
 * framegraph.js - the served page's frame graph (docs/VIEW.md): one bar per frame, or the worst
 * frame of each pixel (/api/frames), scaled to the frames it shows, not to one long frame: the
 * scale's top is the largest frame when it is close to the rest, else about twice their p90, and
 * a bar above the top is cut with a red cap (its duration is in its tooltip). So frames of
 * 0.3 ms under a 16.7 ms budget fill the graph instead of lying flat beside one long frame. The budget line is drawn
 * when the budget is inside the scale; otherwise the graph says it is above. Bars in the
 * timeline's view are bright, the others dimmed.
 *
 * The wheel zooms the graph around the cursor (its own range of frames; shift+wheel pans),
 * double-click shows every frame again; a click zooms the timeline to the frame; hovering shows
 * its duration and its thumbnail when the capture has frame images.
 */
'use strict';

(function () {
    const M = window.MPROF_SERVE, S = M.state;
    const status = document.getElementById('mprof-status');
    const set = (k, v) => { status.dataset[k] = String(v); };
    const fg = document.getElementById('framegraph');
    const F = { from: null, to: null, cols: [] };

    function budgetNs() { return S.meta.budget_ns || 16666667; }

    function count() { return S.meta && S.meta.frames ? S.meta.frames.count : 0; }

    S.loadFrames = () => {
        const w = Math.max(1, Math.round(fg.getBoundingClientRect().width));
        const n = count();
        let q = '/api/frames?w=' + w;
        if (F.from !== null && n) {
            F.from = Math.max(0, Math.min(F.from, n - 1));
            F.to = Math.max(F.from + 1, Math.min(F.to, n));
            q += '&from=' + F.from + '&to=' + F.to;
        }
        return M.api(q).then((f) => { S.frames = f; S.drawFrames(); });
    };

    /* The scale's top for the frames shown: their maximum when no frame stands far above the
     * rest (within twice their p90), else twice the p90 or a little above the p95, whichever is
     * higher: a few long frames (the first one, a hitch) are cut instead of flattening the rest. */
    function scaleTop(f) {
        const p90 = f.p90 || 0, mx = f.max || 0;
        if (!(mx > 0)) return 1;
        if (mx <= 2 * p90) return mx * 1.08;
        return Math.min(mx * 1.08, Math.max(2 * p90, (f.p95 || 0) * 1.2));
    }

    S.drawFrames = () => {
        const r = fg.getBoundingClientRect();
        const W = r.width, H = r.height;
        const ctx = U.fitCanvas(fg, W, H);
        ctx.fillStyle = '#17181b';
        ctx.fillRect(0, 0, W, H);
        ctx.font = '11px system-ui, sans-serif';
        ctx.textBaseline = 'middle';
        F.cols = [];
        if (!S.frames || !S.frames.f.length) {
            ctx.fillStyle = '#8b8f98';
            ctx.fillText('no frames in this capture (MPROF_FRAME_MARK was never called)', 8, 14);
            set('fgBars', 0);
            return;
        }
        const f = S.frames, a = f.f, n = a.length / 3;
        const top = scaleTop(f), budget = budgetNs();
        const base = H - 2, room = H - 16; /* 14 px at the top for the labels */
        const bw = W / n;
        let minBar = Infinity, clipped = 0;
        const heights = [];
        for (let k = 0; k < n; k++) {
            const s = a[3 * k + 1], d = a[3 * k + 2];
            const cut = d > top;
            const hgt = d > 0 ? Math.max(2, Math.min(1, d / top) * room) : 0;
            const inView = s + d > S.view.t0 && s < S.view.t1;
            const col = d <= budget ? '#3d9a4f' : d <= 2 * budget ? '#d9b53c' : '#c0392b';
            ctx.fillStyle = inView ? col : U.rgbCss(U.shade(parseInt(col.slice(1), 16), 0.55));
            const x = k * bw, w = Math.max(1, bw - (bw > 3 ? 1 : 0));
            ctx.fillRect(x, base - hgt, w, hgt);
            if (cut) { /* above the scale: a red cap */
                ctx.fillStyle = '#ff5050';
                ctx.fillRect(x, base - hgt, w, 3);
                clipped++;
            }
            if (hgt > 0 && hgt < minBar) minBar = hgt;
            heights.push(hgt);
            F.cols.push(k);
        }
        const yOf = (v) => base - Math.min(1, v / top) * room;
        const line = (v, color, label, right) => {
            const y = Math.round(yOf(v)) + 0.5;
            ctx.strokeStyle = color;
            ctx.setLineDash([4, 4]);
            ctx.beginPath();
            ctx.moveTo(0, y);
            ctx.lineTo(W, y);
            ctx.stroke();
            ctx.setLineDash([]);
            const t = label + ' ' + U.fmtNs(v), tw = ctx.measureText(t).width;
            ctx.fillStyle = 'rgba(23,24,27,0.8)';
            ctx.fillRect(W - right - tw - 6, y - 7, tw + 4, 13);
            ctx.fillStyle = color;
            ctx.fillText(t, W - right - tw - 4, y);
        };
        if (f.p95 > 0 && f.p95 < top) line(f.p95, '#f0c674', 'p95', 180);
        let budgetState;
        if (budget <= top) {
            line(budget, '#ff6b6b', 'budget', 4);
            budgetState = 'drawn';
        } else {
            budgetState = 'above';
        }
        /* What the graph shows, at its top. */
        const shown = (f.to - f.from) + ' of ' + U.fmtCount(f.count) + ' frames' +
            (f.from > 0 || f.to < f.count ? ' (' + f.from + '..' + (f.to - 1) + '; double-click: all)' : '') +
            ', p50 ' + U.fmtNs(f.p50) + ', p99 ' + U.fmtNs(f.p99) + ', max ' + U.fmtNs(f.max) + '; scale 0..' + U.fmtNs(top) +
            (clipped ? ', ' + clipped + ' above it (red caps)' : '') +
            (budgetState === 'above' ? '; budget ' + U.fmtNs(budget) + ' is above the scale' : '');
        const tw = ctx.measureText(shown).width;
        ctx.fillStyle = 'rgba(23,24,27,0.8)';
        ctx.fillRect(2, 1, tw + 8, 13);
        ctx.fillStyle = budgetState === 'above' ? '#ffb0a0' : '#cfd3da';
        ctx.fillText(shown, 6, 7);
        set('fgTop', Math.round(top));
        set('fgBudget', budgetState);
        set('fgMinBar', minBar === Infinity ? 0 : minBar.toFixed(1));
        heights.sort((x, y) => x - y);
        set('fgMedianBar', (heights[heights.length >> 1] / room).toFixed(3)); /* of the graph's height */
        set('fgClipped', clipped);
        set('fgBars', n);
        set('fgFrom', f.from);
        set('fgTo', f.to);
    };

    function frameAt(e) {
        if (!S.frames || !S.frames.f.length) return -1;
        const r = fg.getBoundingClientRect(), n = S.frames.f.length / 3;
        return Math.max(0, Math.min(n - 1, Math.floor(((e.clientX - r.left) / r.width) * n)));
    }

    fg.addEventListener('click', (e) => {
        const k = frameAt(e);
        if (k < 0) return;
        const s = S.frames.f[3 * k + 1], d = S.frames.f[3 * k + 2];
        set('frame', S.frames.f[3 * k]);
        M.zoomTo(s, s + d);
    });
    fg.addEventListener('wheel', (e) => {
        e.preventDefault();
        const n = count();
        if (!n) return;
        const a = F.from === null ? 0 : F.from, b = F.from === null ? n : F.to;
        const r = fg.getBoundingClientRect(), at = a + ((e.clientX - r.left) / r.width) * (b - a);
        let na, nb;
        if (e.shiftKey) { /* pan */
            const step = Math.max(1, Math.round((b - a) * 0.2)) * Math.sign(e.deltaY || 1);
            na = a + step;
            nb = b + step;
            if (na < 0) { nb -= na; na = 0; }
            if (nb > n) { na -= nb - n; nb = n; }
        } else {
            const k = Math.pow(1.0015, e.deltaY);
            na = Math.floor(at - (at - a) * k);
            nb = Math.ceil(at + (b - at) * k);
        }
        na = Math.max(0, na);
        nb = Math.min(n, Math.max(na + 8, nb));
        if (na === 0 && nb >= n) { F.from = F.to = null; } else { F.from = na; F.to = nb; }
        S.loadFrames();
    }, { passive: false });
    fg.addEventListener('dblclick', () => { F.from = F.to = null; S.loadFrames(); });

    /* Hovering a frame shows its duration and, when the capture has MPROF_FRAME_IMAGE, its picture. */
    let imgBusy = false, imgWant = -1;
    fg.addEventListener('mousemove', (e) => {
        const k = frameAt(e);
        if (k < 0) return;
        const tip = document.getElementById('tooltip');
        const idx = S.frames.f[3 * k], d = S.frames.f[3 * k + 2];
        tip.textContent = 'frame ' + idx + ': ' + U.fmtNs(d) + (d > scaleTop(S.frames) ? ' (above the scale)' : '') +
            ' (click to zoom to it)';
        tip.style.display = 'block';
        tip.style.left = Math.min(e.clientX + 14, window.innerWidth - 260) + 'px';
        tip.style.top = (e.clientY + 14) + 'px';
        if (!S.meta.frame_images) return;
        imgWant = idx;
        if (imgBusy) return;
        imgBusy = true;
        M.api('/api/image?frame=' + idx).then((im) => {
            if (im.frame !== imgWant) return;
            const bin = atob(im.rgb), cv = U.el('canvas', { width: im.w, height: im.h, id: 'frame-image' });
            cv.style.cssText = 'display:block;margin-top:4px;width:' + im.w * 2 + 'px;height:' + im.h * 2 + 'px;image-rendering:pixelated';
            const ctx = cv.getContext('2d'), data = ctx.createImageData(im.w, im.h);
            for (let i = 0, o = 0; i < bin.length; i += 3, o += 4) {
                data.data[o] = bin.charCodeAt(i);
                data.data[o + 1] = bin.charCodeAt(i + 1);
                data.data[o + 2] = bin.charCodeAt(i + 2);
                data.data[o + 3] = 255;
            }
            ctx.putImageData(data, 0, 0);
            tip.appendChild(cv);
            set('imageFrame', im.frame);
            set('imageSize', im.w + 'x' + im.h);
            set('imageRed', bin.charCodeAt(0));
        }).catch(() => {}).finally(() => { imgBusy = false; });
    });
    fg.addEventListener('mouseleave', () => { document.getElementById('tooltip').style.display = 'none'; });
    /* The first frames, once the page has its metadata (serve.js started without them). */
    if (S.meta) S.loadFrames();
})();
