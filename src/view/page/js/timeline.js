/*
 * timeline.js - the zoomable timeline: a ruler, frame boundaries, message markers, one track per
 * thread / fiber / GPU context / lock with nested zones, and plot graphs underneath.
 *
 * Drawing cost follows the screen, not the capture. For each depth of each track the zones are
 * binary-searched to the visible window; zones narrower than MERGE_PX are merged with their tiny
 * neighbours into one block ("N zones"), and the merge jumps over a pixel's worth of zones with
 * one more binary search, so a million zones in view cost a few thousand draw calls. Plots draw
 * one min/max bar per pixel when they have more points than pixels.
 *
 * Controls: wheel zooms around the cursor (shift+wheel scrolls the tracks), drag pans, right-drag
 * or shift+drag selects a range, click selects a zone, double-click zooms to it, W/S zoom,
 * A/D pan, Home shows the whole range. Moves animate towards a target for a smooth feel.
 */
'use strict';

class Timeline extends CanvasView {
    constructor(D, canvas, tooltip, app) {
        super(D, canvas, tooltip, app);
        this.ROW = 17;
        this.HEADER = 18;
        this.RULER = 22;
        this.FRAMES_ROW = 16;
        this.MSG_ROW = 14;
        this.PLOT_H = 54;
        this.MERGE_PX = 2;
        this.font = '11px monospace';
        this.charW = 6.6;
        this.v0 = D.start;
        this.v1 = D.end;
        this.t0 = this.v0;
        this.t1 = this.v1;
        this.scrollY = 0;
        this.sel = null; /* [t0, t1] */
        this.selZone = null; /* {track, i} */
        this.highlightLoc = -1;
        this.hits = []; /* layout rows for hit testing, rebuilt every draw */
        this.drawn = { zones: 0, merged: 0 };
        this.animating = false;
        this.dirty = true;
        this.mouse = null;
        this.drag = null;
        this.bind();
        this.requestDraw();
    }

    /* ---- view range -------------------------------------------------------------------- */

    setView(t0, t1, animate) {
        const minSpan = 100; /* 100 ns */
        const total = this.D.end - this.D.start;
        if (t1 - t0 < minSpan) {
            const c = (t0 + t1) / 2;
            t0 = c - minSpan / 2;
            t1 = c + minSpan / 2;
        }
        const pad = total * 0.05;
        if (t1 - t0 > total + 2 * pad) {
            t0 = this.D.start - pad;
            t1 = this.D.end + pad;
        }
        this.t0 = t0;
        this.t1 = t1;
        if (!animate) {
            this.v0 = t0;
            this.v1 = t1;
        }
        this.requestDraw();
        if (this.app) this.app.onViewChanged(this.t0, this.t1);
    }

    zoomAt(x, factor) {
        const w = this.width();
        const t = this.t0 + (x / w) * (this.t1 - this.t0);
        this.setView(t - (t - this.t0) * factor, t + (this.t1 - t) * factor, true);
    }

    pan(dxPx) {
        const dt = (dxPx / this.width()) * (this.t1 - this.t0);
        this.setView(this.t0 + dt, this.t1 + dt, true);
    }

    showAll() {
        this.setView(this.D.start, this.D.end, true);
    }

    zoomTo(t0, t1) {
        const pad = (t1 - t0) * 0.04;
        this.setView(t0 - pad, t1 + pad, true);
    }

    width() {
        return this.canvas.clientWidth || 800;
    }

    height() {
        return this.canvas.clientHeight || 400;
    }

    requestDraw() {
        this.dirty = true;
        if (this.rafPending) return;
        this.rafPending = true;
        requestAnimationFrame(() => {
            this.rafPending = false;
            this.step();
        });
    }

    /* One animation step: move the drawn range a third of the way to the target. */
    step() {
        const span = this.t1 - this.t0;
        const close = Math.abs(this.v0 - this.t0) < span * 1e-4 && Math.abs(this.v1 - this.t1) < span * 1e-4;
        if (close) {
            this.v0 = this.t0;
            this.v1 = this.t1;
        } else {
            this.v0 += (this.t0 - this.v0) * 0.35;
            this.v1 += (this.t1 - this.v1) * 0.35;
        }
        this.draw();
        if (!close) this.requestDraw();
    }

    /* ---- layout ------------------------------------------------------------------------ */

    trackHeight(t) {
        if (t.collapsed || t.n === 0) return this.HEADER;
        return this.HEADER + (t.maxDepth + 1) * this.ROW + 4;
    }

    /* Rows that do not scroll: ruler, main frames, named frame sets, messages. */
    fixedHeight() {
        return this.RULER + this.FRAMES_ROW * (1 + this.D.frameSets.length) + (this.D.messages ? this.MSG_ROW : 0);
    }

    /* The tracks in order, with a header row before each process's first track in a capture of
     * several: [{proc: i}] or [{track: t}]; the tracks of a collapsed process are left out. */
    trackRows() {
        const D = this.D, rows = [];
        let prev = -1;
        for (const t of D.tracks) {
            const p = D.processes && t.process >= 0 && t.process < D.processes.length ? t.process : -1;
            if (p >= 0 && p !== prev) rows.push({ proc: p });
            prev = p;
            if (p >= 0 && D.processes[p].collapsed) continue;
            rows.push({ track: t });
        }
        return rows;
    }

    contentHeight() {
        let h = this.fixedHeight();
        for (const r of this.trackRows()) h += r.track ? this.trackHeight(r.track) : this.HEADER;
        for (let i = 0; i < this.D.plots.length; i++) h += this.PLOT_H + 4;
        return h;
    }

    /* ---- drawing ----------------------------------------------------------------------- */

    draw() {
        const t0 = performance.now();
        const W = this.width(), H = this.height();
        const ctx = U.fitCanvas(this.canvas, W, H);
        const D = this.D;
        this.hits = [];
        this.drawn = { zones: 0, merged: 0 };
        ctx.fillStyle = '#1e1f22';
        ctx.fillRect(0, 0, W, H);
        ctx.font = this.font;
        ctx.textBaseline = 'middle';
        const k = W / (this.v1 - this.v0);
        this.k = k;
        const maxScroll = Math.max(0, this.contentHeight() - H + 20);
        if (this.scrollY > maxScroll) this.scrollY = maxScroll;
        if (this.scrollY < 0) this.scrollY = 0;

        /* Everything below the fixed rows scrolls. */
        const top = this.fixedHeight();
        let y = top - this.scrollY;
        ctx.save();
        ctx.beginPath();
        ctx.rect(0, top, W, H - top);
        ctx.clip();
        this.drawFrameStripes(ctx, top, H, k);
        for (const r of this.trackRows()) {
            if (!r.track) {
                if (y + this.HEADER >= top && y <= H) this.drawProcess(ctx, r.proc, y, W);
                y += this.HEADER;
                continue;
            }
            const t = r.track;
            const h = this.trackHeight(t);
            if (y + h >= top && y <= H) this.drawTrack(ctx, t, y, k, W);
            y += h;
        }
        for (const p of D.plots) {
            if (y + this.PLOT_H >= top && y <= H) this.drawPlot(ctx, p, y, k, W);
            this.hits.push({ kind: 'plot', plot: p, y: y, h: this.PLOT_H });
            y += this.PLOT_H + 4;
        }
        this.drawSelection(ctx, top, H, k);
        ctx.restore();

        this.drawRuler(ctx, W, k);
        this.drawFramesRow(ctx, W, k);
        if (D.messages) this.drawMessages(ctx, W, k);
        this.drawn.ms = performance.now() - t0;
        if (this.app) this.app.onDrawn(this.drawn);
    }

    x(t) {
        return (t - this.v0) * this.k;
    }

    drawRuler(ctx, W, k) {
        ctx.fillStyle = '#2b2d31';
        ctx.fillRect(0, 0, W, this.RULER);
        const step = U.niceStep(1 / k, 90);
        const first = Math.ceil(this.v0 / step) * step;
        ctx.strokeStyle = '#666';
        ctx.fillStyle = '#bbb';
        const span = this.v1 - this.v0;
        const label = 'view ' + U.fmtNs(span);
        const labelX = W - label.length * this.charW - 6;
        ctx.beginPath();
        for (let t = first; t <= this.v1; t += step) {
            const x = Math.round(this.x(t)) + 0.5;
            ctx.moveTo(x, this.RULER - 8);
            ctx.lineTo(x, this.RULER);
            const text = U.fmtTs(t, step);
            if (x + 3 + text.length * this.charW < labelX - 8) ctx.fillText(text, x + 3, 8);
        }
        ctx.stroke();
        ctx.fillStyle = '#ddd';
        ctx.fillText(label, labelX, 8);
    }

    /* Visible frames: [first, last] indices of D.frames overlapping the view. */
    visibleFrames() {
        const f = this.D.frames;
        if (!f || !f.n) return null;
        let a = U.upperBound(f.start, this.v0) - 1;
        if (a < 0) a = 0;
        const b = U.upperBound(f.start, this.v1);
        return [a, b];
    }

    drawFrameStripes(ctx, top, H, k) {
        const f = this.D.frames;
        const vf = this.visibleFrames();
        if (!vf) return;
        if ((vf[1] - vf[0]) > this.width() / 3) return; /* too dense to be useful */
        for (let i = vf[0]; i < vf[1]; i++) {
            const x = this.x(f.start[i]);
            if (i % 2) {
                ctx.fillStyle = 'rgba(255,255,255,0.025)';
                ctx.fillRect(x, top, f.dur[i] * k, H - top);
            }
            ctx.strokeStyle = 'rgba(255,220,120,0.25)';
            ctx.beginPath();
            ctx.moveTo(Math.round(x) + 0.5, top);
            ctx.lineTo(Math.round(x) + 0.5, H);
            ctx.stroke();
        }
    }

    drawFramesRow(ctx, W, k) {
        this.drawFrameSet(ctx, W, k, this.D.frames, this.RULER, true);
        this.D.frameSets.forEach((f, i) => this.drawFrameSet(ctx, W, k, f, this.RULER + this.FRAMES_ROW * (i + 1), false));
    }

    /* One row of frames: the main set (colored against the budget, numbered) or a named set. */
    drawFrameSet(ctx, W, k, f, y, main) {
        const D = this.D;
        ctx.fillStyle = '#26272b';
        ctx.fillRect(0, y, W, this.FRAMES_ROW);
        this.hits.push({ kind: 'frames', y: y, h: this.FRAMES_ROW, fixed: true, set: f, main: main });
        if (!f || !f.n) return;
        const budget = D.budgetNs;
        const a = Math.max(0, U.upperBound(f.start, this.v0) - 1), b = U.upperBound(f.start, this.v1);
        let lastX = -1e9;
        for (let i = a; i < b; i++) {
            const x0 = this.x(f.start[i]);
            const w = f.dur[i] * k;
            if (x0 + w < this.x(this.v0) || (x0 + w < lastX + 1 && w < 1)) continue;
            lastX = x0 + w;
            ctx.fillStyle = !main ? '#5a6b8c' : f.dur[i] > budget * 2 ? '#c0392b' : f.dur[i] > budget ? '#c9a227' : '#3d7a46';
            ctx.fillRect(x0, y + 2, Math.max(1, w - 1), this.FRAMES_ROW - 4);
            if (w > 60) {
                ctx.fillStyle = '#fff';
                const label = U.fitText(ctx, f.name + ' ' + (f.first + i) + ' ' + U.fmtNs(f.dur[i]), w - 6, this.charW);
                ctx.fillText(label, Math.max(x0, 0) + 3, y + this.FRAMES_ROW / 2);
            }
        }
    }

    drawMessages(ctx, W, k) {
        const m = this.D.messages;
        const y = this.RULER + this.FRAMES_ROW * (1 + this.D.frameSets.length);
        ctx.fillStyle = '#232428';
        ctx.fillRect(0, y, W, this.MSG_ROW);
        this.hits.push({ kind: 'messages', y: y, h: this.MSG_ROW, fixed: true });
        let i = U.lowerBound(m.ts, this.v0);
        const end = U.upperBound(m.ts, this.v1);
        /* One marker per pixel column, showing the most severe message there. */
        let col = -1, worst = 0;
        const flush = () => {
            if (col < 0) return;
            ctx.fillStyle = U.LEVEL_COLORS[worst] || '#ccc';
            ctx.beginPath();
            ctx.moveTo(col - 4, y + 2);
            ctx.lineTo(col + 4, y + 2);
            ctx.lineTo(col, y + this.MSG_ROW - 2);
            ctx.closePath();
            ctx.fill();
        };
        for (; i < end; i++) {
            const x = Math.round(this.x(m.ts[i]) / 3) * 3;
            if (x !== col) {
                flush();
                col = x;
                worst = 0;
            }
            if (m.level[i] > worst) worst = m.level[i];
        }
        flush();
    }

    /* The header row of a process of a capture of several: click collapses its tracks. */
    drawProcess(ctx, i, y, W) {
        const p = this.D.processes[i];
        this.hits.push({ kind: 'process', proc: i, y: y, h: this.HEADER });
        ctx.fillStyle = '#3a3550';
        ctx.fillRect(0, y, W, this.HEADER);
        ctx.fillStyle = p.endedBy ? '#ffb36b' : '#d9d2ff';
        ctx.fillText((p.collapsed ? '\u25b6 ' : '\u25bc ') + Data.processHeader(this.D, i), 6, y + this.HEADER / 2);
    }

    drawTrack(ctx, t, y, k, W) {
        const D = this.D;
        this.hits.push({ kind: 'header', track: t, y: y, h: this.HEADER });
        ctx.fillStyle = '#2f3136';
        ctx.fillRect(0, y, W, this.HEADER);
        ctx.fillStyle = t.kind === 'gpu' ? '#d5a6ff' : t.kind === 'lock' ? '#ffb36b' : t.kind === 'fiber' ? '#7fd1c7' :
            t.kind === 'async' ? '#9cc9ff' : '#e8e8e8';
        const arrow = t.collapsed ? '\u25b6 ' : '\u25bc ';
        const kind = t.kind === 'thread' ? '' : '[' + t.kind + '] ';
        const what = t.async ? U.fmtCount(t.n) + ' spans, ' + (t.maxDepth + 1) + ' lanes' : U.fmtCount(t.n) + ' zones';
        ctx.fillText(arrow + kind + t.name + '  (' + what + ')', 6, y + this.HEADER / 2);
        SystemView.drawStrip(this, ctx, t, y, W); /* system.js: running / preempted / blocked */
        if (t.collapsed || t.n === 0) return;
        const y0 = y + this.HEADER + 2;
        for (let d = 0; d <= t.maxDepth; d++) {
            const ry = y0 + d * this.ROW;
            if (ry > this.height() || ry + this.ROW < 0) continue;
            this.hits.push({ kind: 'level', track: t, depth: d, y: ry, h: this.ROW });
            this.drawLevel(ctx, t, t.levels[d], ry, k, W);
            if (t.rows && t.rows[d]) {
                ctx.fillStyle = 'rgba(0,0,0,0.55)';
                const label = t.rows[d];
                ctx.fillRect(W - label.length * this.charW - 10, ry, label.length * this.charW + 10, this.ROW - 1);
                ctx.fillStyle = '#ddd';
                ctx.fillText(label, W - label.length * this.charW - 5, ry + this.ROW / 2);
            }
        }
    }

    drawLevel(ctx, t, l, y, k, W) {
        const D = this.D;
        const s = l.s, e = l.e, n = l.n;
        const h = this.ROW - 1;
        const pxT = 1 / k;
        const mergePx = this.MERGE_PX;
        let i = U.lowerBound(e, this.v0);
        while (i < n && s[i] <= this.v1) {
            const w = (e[i] - s[i]) * k;
            if (w >= mergePx) {
                this.drawZone(ctx, t, l.idx[i], s[i], w, y, h, W);
                i++;
                continue;
            }
            /* Merge a run of tiny zones: everything that starts within a pixel of the run's end
             * joins, found by binary search rather than by visiting each zone. */
            let runEnd = e[i], j = i + 1, count = 1;
            while (j < n && s[j] <= runEnd + pxT && (e[j] - s[j]) * k < mergePx) {
                let jj = U.upperBound(s, runEnd + pxT, j + 1, n);
                if (jj - 1 > j && (e[jj - 1] - s[jj - 1]) * k >= mergePx) jj--;
                count += jj - j;
                if (e[jj - 1] > runEnd) runEnd = e[jj - 1];
                j = jj;
            }
            this.drawMerged(ctx, t, l.idx[i], s[i], runEnd, count, y, h);
            i = j;
        }
    }

    drawZone(ctx, t, zi, s, w, y, h, W) {
        const D = this.D;
        const sl = D.srclocs[t.loc[zi]];
        let x = (s - this.v0) * this.k;
        let ww = w;
        if (x < -2) {
            ww += x + 2;
            x = -2;
        }
        if (x + ww > W + 2) ww = W + 2 - x;
        const rgb = sl.rgb;
        ctx.fillStyle = U.rgbCss(rgb);
        ctx.fillRect(x, y, Math.max(ww - 0.5, 1), h);
        this.drawn.zones++;
        const selected = this.selZone && this.selZone.track === t && this.selZone.i === zi;
        if (selected || t.loc[zi] === this.highlightLoc) {
            ctx.strokeStyle = selected ? '#fff' : '#ffe066';
            ctx.lineWidth = 2;
            ctx.strokeRect(x + 1, y + 1, Math.max(ww - 2, 1), h - 2);
            ctx.lineWidth = 1;
        }
        if (t.async && t.unfinished.has(zi) && ww > 6) {
            /* Open at the end of the capture: a white arrow at the end it has not reached. */
            const xe = x + ww;
            ctx.fillStyle = '#fff';
            ctx.beginPath();
            ctx.moveTo(xe - 6, y + 1);
            ctx.lineTo(xe, y + h / 2);
            ctx.lineTo(xe - 6, y + h - 1);
            ctx.closePath();
            ctx.fill();
        }
        if (ww > 24) {
            const name = Data.zoneName(D, t, zi);
            const dur = t.dur[zi];
            let label = name + ' ' + U.fmtNs(dur);
            if (label.length * this.charW > ww - 6) label = name;
            label = U.fitText(ctx, label, ww - 6, this.charW);
            if (label) {
                ctx.fillStyle = U.textOn(rgb);
                ctx.fillText(label, Math.max(x, 0) + 3, y + h / 2 + 1);
            }
        }
    }

    drawMerged(ctx, t, zi, s, e, count, y, h) {
        const sl = this.D.srclocs[t.loc[zi]];
        const x = (s - this.v0) * this.k;
        const w = Math.max(1, (e - s) * this.k);
        ctx.fillStyle = U.rgbCss(U.shade(sl.rgb, 0.6));
        ctx.fillRect(x, y + 2, w, h - 4);
        this.drawn.merged += count;
        if (w > 60) {
            ctx.fillStyle = '#ddd';
            ctx.fillText(U.fitText(ctx, U.fmtCount(count) + ' zones', w - 6, this.charW), Math.max(x, 0) + 3, y + h / 2 + 1);
        }
    }

    drawPlot(ctx, p, y, k, W) {
        const h = this.PLOT_H;
        ctx.fillStyle = '#25262a';
        ctx.fillRect(0, y, W, h);
        const lo = p.min, hi = p.max === p.min ? p.min + 1 : p.max;
        const py = (v) => y + h - 3 - ((v - lo) / (hi - lo)) * (h - 16);
        const css = U.rgbCss(p.rgb);
        ctx.strokeStyle = css;
        ctx.fillStyle = css;
        let i = Math.max(0, U.lowerBound(p.ts, this.v0) - 1);
        const end = Math.min(p.n, U.upperBound(p.ts, this.v1) + 1);
        ctx.beginPath();
        if (end - i > W * 2) {
            /* Dense: a min/max bar per pixel. */
            let col = -1, mn = 0, mx = 0;
            for (; i < end; i++) {
                const x = Math.floor(this.x(p.ts[i]));
                if (x !== col) {
                    if (col >= 0) ctx.fillRect(col, py(mx), 1, Math.max(1, py(mn) - py(mx)));
                    col = x;
                    mn = mx = p.v[i];
                } else {
                    if (p.v[i] < mn) mn = p.v[i];
                    if (p.v[i] > mx) mx = p.v[i];
                }
            }
            if (col >= 0) ctx.fillRect(col, py(mx), 1, Math.max(1, py(mn) - py(mx)));
        } else {
            let first = true, prevY = 0;
            for (; i < end; i++) {
                const x = this.x(p.ts[i]), yy = py(p.v[i]);
                if (first) ctx.moveTo(x, yy);
                else if (p.style === 2) {
                    ctx.lineTo(x, prevY);
                    ctx.lineTo(x, yy);
                } else ctx.lineTo(x, yy);
                first = false;
                prevY = yy;
            }
            ctx.stroke();
        }
        ctx.fillStyle = '#ccc';
        ctx.fillText(p.name + '  [' + U.fmtValue(p.min, p.format) + ' .. ' + U.fmtValue(p.max, p.format) + ']', 6, y + 7);
    }

    drawSelection(ctx, top, H, k) {
        if (!this.sel) return;
        const x0 = this.x(this.sel[0]), x1 = this.x(this.sel[1]);
        ctx.fillStyle = 'rgba(80,140,255,0.18)';
        ctx.fillRect(x0, top, x1 - x0, H - top);
        ctx.strokeStyle = 'rgba(120,170,255,0.9)';
        ctx.strokeRect(x0 + 0.5, top + 0.5, x1 - x0, H - top - 1);
        ctx.fillStyle = '#cfe0ff';
        ctx.fillText('selection ' + U.fmtNs(this.sel[1] - this.sel[0]), Math.max(0, x0) + 4, H - 8);
    }

    /* ---- hit testing ------------------------------------------------------------------- */

    /* What is under (x, y): {kind, ...} or null. */
    pick(x, y) {
        const D = this.D;
        const t = this.v0 + x / this.k;
        for (const h of this.hits) {
            if (y < h.y || y >= h.y + h.h) continue;
            if (h.kind === 'level') {
                const l = h.track.levels[h.depth];
                const j = U.lowerBound(l.e, t);
                if (j < l.n && l.s[j] <= t) return { kind: 'zone', track: h.track, i: l.idx[j] };
                /* Within a merged block: the nearest zone within two pixels. */
                const tol = 2 / this.k;
                const a = U.lowerBound(l.e, t - tol);
                if (a < l.n && l.s[a] <= t + tol) {
                    const b = U.upperBound(l.s, t + tol);
                    return { kind: 'merged', track: h.track, a: a, b: b, level: l };
                }
                return null;
            }
            if (h.kind === 'header') return { kind: 'header', track: h.track };
            if (h.kind === 'frames' && h.set) {
                const f = h.set;
                const i = U.upperBound(f.start, t) - 1;
                if (i >= 0 && t <= f.start[i] + f.dur[i]) return { kind: 'frame', i: i, set: f, main: h.main };
                return null;
            }
            if (h.kind === 'messages' && D.messages) {
                const m = D.messages;
                const tol = 5 / this.k;
                const a = U.lowerBound(m.ts, t - tol), b = U.upperBound(m.ts, t + tol);
                if (b > a) return { kind: 'messages', a: a, b: b };
                return null;
            }
            if (h.kind === 'plot') {
                const p = h.plot;
                const i = U.upperBound(p.ts, t) - 1;
                if (i >= 0) return { kind: 'plot', plot: p, i: i };
                return null;
            }
        }
        return null;
    }

    tooltipHtml(hit) {
        const D = this.D;
        const e = U.escapeHtml;
        if (hit.kind === 'zone' && hit.track.async) {
            const t = hit.track, i = hit.i, a = t.async;
            let h = '<b>' + e(Data.zoneName(D, t, i)) + '</b> <span class="dim">(async, ' + e(t.name) + ')</span>';
            h += '<br>duration <b>' + U.fmtNs(t.dur[i]) + '</b>' + (t.unfinished.has(i) ? ' (open at the end of the capture)' : '');
            h += '<br>start ' + U.fmtTs(t.start[i], 1) + ', lane ' + t.depth[i];
            h += '<br>begun on ' + e(a.begin[i]) + ', ' + (a.end[i] === null ? 'never ended' : 'ended on ' + e(a.end[i]));
            if (a.cut.has(i)) h += '<br>its id was begun again while it was open: it ends there';
            return h;
        }
        if (hit.kind === 'zone') {
            const t = hit.track, i = hit.i;
            const sl = D.srclocs[t.loc[i]];
            let h = '<b>' + e(Data.zoneName(D, t, i)) + '</b>';
            if (t.names.has(i)) h += ' <span class="dim">(' + e(sl.name) + ')</span>';
            h += '<br><span class="dim">' + e(sl.func) + ' ' + e(sl.file) + ':' + sl.line + '</span>';
            h += '<br>duration <b>' + U.fmtNs(t.dur[i]) + '</b>, self ' + U.fmtNs(t.self[i]);
            h += '<br>start ' + U.fmtTs(t.start[i], 1) + ', depth ' + t.depth[i] + ', ' + e(Data.trackLabel(D, t));
            if (t.texts.has(i)) h += '<br>text: ' + e(t.texts.get(i));
            if (t.values.has(i)) h += '<br>value: ' + e(String(t.values.get(i)));
            return h;
        }
        if (hit.kind === 'merged') {
            const l = hit.level;
            const n = hit.b - hit.a;
            const span = l.e[hit.b - 1] - l.s[hit.a];
            return '<b>' + U.fmtCount(n) + ' zones</b> too small to draw apart<br>span ' + U.fmtNs(span) + '<br>zoom in to see them';
        }
        if (hit.kind === 'frame') {
            const f = hit.set;
            return '<b>' + e(f.name) + ' ' + (f.first + hit.i) + '</b><br>' + U.fmtNs(f.dur[hit.i]) +
                (hit.main ? ' (budget ' + U.fmtNs(D.budgetNs) + ')' : '') + '<br>click to zoom';
        }
        if (hit.kind === 'messages') {
            const m = D.messages;
            let h = '';
            for (let i = hit.a; i < Math.min(hit.b, hit.a + 8); i++) {
                const tr = D.tracks[m.track[i]];
                h += '<span style="color:' + U.LEVEL_COLORS[m.level[i]] + '">[' + U.LEVEL_NAMES[m.level[i]] + ']</span> ' +
                    U.fmtTs(m.ts[i], 1) + ' ' + (tr ? e(tr.name) + ': ' : '') + e(m.text[i]) + '<br>';
            }
            if (hit.b - hit.a > 8) h += '... ' + (hit.b - hit.a - 8) + ' more';
            return h;
        }
        if (hit.kind === 'plot') {
            const p = hit.plot;
            return '<b>' + e(p.name) + '</b><br>' + U.fmtValue(p.v[hit.i], p.format) + ' at ' + U.fmtTs(p.ts[hit.i], 1);
        }
        if (hit.kind === 'process') {
            const p = D.processes[hit.proc];
            return '<b>' + e(Data.processHeader(D, hit.proc)) + '</b><br>process ' + (hit.proc + 1) + ' of ' + D.processes.length + ', ' +
                p.threads + ' threads<br>click to ' + (p.collapsed ? 'expand' : 'collapse');
        }
        if (hit.kind === 'header') {
            const t = hit.track;
            if (t.async)
                return '<b>' + e(t.name) + '</b> (async track: spans begun and ended on any threads)<br>' +
                    U.fmtCount(t.n) + ' spans on ' + (t.maxDepth + 1) + ' lanes, ' + t.async.openAtEnd + ' open at the end, ' +
                    t.async.unmatchedEnds + ' ends without a begin<br>click to ' + (t.collapsed ? 'expand' : 'collapse');
            return '<b>' + e(t.name) + '</b> (' + t.kind + (t.tid !== undefined ? ', tid ' + t.tid : '') + ')<br>' +
                U.fmtCount(t.n) + ' zones, depth ' + (t.maxDepth + 1) + '<br>click to ' + (t.collapsed ? 'expand' : 'collapse');
        }
        return '';
    }

    /* ---- input ------------------------------------------------------------------------- */

    bind() {
        const c = this.canvas;
        c.addEventListener('wheel', (ev) => {
            ev.preventDefault();
            const r = c.getBoundingClientRect();
            if (ev.shiftKey) {
                this.scrollY += ev.deltaY;
                this.requestDraw();
                return;
            }
            if (Math.abs(ev.deltaX) > Math.abs(ev.deltaY)) {
                this.pan(ev.deltaX);
                return;
            }
            const f = Math.pow(1.0015, ev.deltaMode === 1 ? ev.deltaY * 30 : ev.deltaY);
            this.zoomAt(ev.clientX - r.left, f);
        }, { passive: false });
        c.addEventListener('mousedown', (ev) => {
            const r = c.getBoundingClientRect();
            const x = ev.clientX - r.left, y = ev.clientY - r.top;
            const select = ev.button === 2 || ev.shiftKey;
            this.drag = { x0: x, y0: y, x: x, y: y, moved: false, select: select, vt0: this.t0, vt1: this.t1, sy: this.scrollY };
            ev.preventDefault();
        });
        c.addEventListener('contextmenu', (ev) => ev.preventDefault());
        window.addEventListener('mousemove', (ev) => {
            const r = c.getBoundingClientRect();
            const x = ev.clientX - r.left, y = ev.clientY - r.top;
            if (this.drag) {
                const d = this.drag;
                d.x = x;
                d.y = y;
                if (Math.abs(x - d.x0) + Math.abs(y - d.y0) > 3) d.moved = true;
                if (d.select) {
                    const a = this.v0 + Math.min(d.x0, x) / this.k, b = this.v0 + Math.max(d.x0, x) / this.k;
                    this.sel = [a, b];
                    this.requestDraw();
                } else if (d.moved) {
                    const dt = ((x - d.x0) / this.width()) * (d.vt1 - d.vt0);
                    this.t0 = this.v0 = d.vt0 - dt;
                    this.t1 = this.v1 = d.vt1 - dt;
                    this.scrollY = d.sy - (y - d.y0);
                    this.requestDraw();
                    if (this.app) this.app.onViewChanged(this.t0, this.t1);
                }
                this.hideTip();
                return;
            }
            if (x < 0 || y < 0 || x > c.clientWidth || y > c.clientHeight) {
                this.hideTip();
                return;
            }
            this.mouse = { x: x, y: y };
            const hit = this.pick(x, y);
            if (hit) this.showTip(this.tooltipHtml(hit), ev.clientX, ev.clientY);
            else this.hideTip();
        });
        window.addEventListener('mouseup', (ev) => {
            const d = this.drag;
            this.drag = null;
            if (!d) return;
            if (d.select) {
                if (d.moved && this.sel && this.app) this.app.onSelection(this.sel[0], this.sel[1]);
                else {
                    this.sel = null;
                    if (this.app) this.app.onSelection(null, null);
                }
                this.requestDraw();
                return;
            }
            if (!d.moved) this.click(d.x0, d.y0, false);
        });
        c.addEventListener('dblclick', (ev) => {
            const r = c.getBoundingClientRect();
            this.click(ev.clientX - r.left, ev.clientY - r.top, true);
        });
        window.addEventListener('keydown', (ev) => {
            if (ev.target && (ev.target.tagName === 'INPUT' || ev.target.tagName === 'SELECT')) return;
            const w = this.width();
            if (ev.key === 'w' || ev.key === 'W') this.zoomAt(this.mouse ? this.mouse.x : w / 2, 0.8);
            else if (ev.key === 's' || ev.key === 'S') this.zoomAt(this.mouse ? this.mouse.x : w / 2, 1.25);
            else if (ev.key === 'a' || ev.key === 'A') this.pan(-w * 0.1);
            else if (ev.key === 'd' || ev.key === 'D') this.pan(w * 0.1);
            else if (ev.key === 'Home') this.showAll();
            else if (ev.key === 'Escape') {
                this.sel = null;
                this.selZone = null;
                this.highlightLoc = -1;
                if (this.app) this.app.onSelection(null, null);
                this.requestDraw();
            } else return;
            ev.preventDefault();
        });
        window.addEventListener('resize', () => this.requestDraw());
    }

    click(x, y, dbl) {
        const hit = this.pick(x, y);
        if (!hit) {
            this.selZone = null;
            this.requestDraw();
            return;
        }
        if (hit.kind === 'process') {
            this.D.processes[hit.proc].collapsed = !this.D.processes[hit.proc].collapsed;
            this.requestDraw();
        } else if (hit.kind === 'header') {
            hit.track.collapsed = !hit.track.collapsed;
            this.requestDraw();
        } else if (hit.kind === 'zone') {
            this.selZone = { track: hit.track, i: hit.i };
            if (dbl) this.zoomTo(hit.track.start[hit.i], hit.track.end[hit.i]);
            if (this.app) this.app.onZoneSelected(hit.track, hit.i);
            this.requestDraw();
        } else if (hit.kind === 'merged') {
            const l = hit.level;
            this.zoomTo(l.s[hit.a], l.e[hit.b - 1]);
        } else if (hit.kind === 'frame') {
            if (hit.main) this.app.zoomToFrame(hit.i);
            else this.zoomTo(hit.set.start[hit.i], hit.set.start[hit.i] + hit.set.dur[hit.i]);
        }
    }

    showTip(html, cx, cy) {
        const tip = this.tip;
        tip.innerHTML = html;
        tip.style.display = 'block';
        const w = tip.offsetWidth, h = tip.offsetHeight;
        let x = cx + 14, y = cy + 14;
        if (x + w > window.innerWidth - 4) x = cx - w - 10;
        if (y + h > window.innerHeight - 4) y = cy - h - 10;
        tip.style.left = x + 'px';
        tip.style.top = y + 'px';
    }

    hideTip() {
        this.tip.style.display = 'none';
    }
}
