/*
 * framegraph.js - the frame-time graph over the whole capture: one bar per frame (or, when there
 * are more frames than pixels, the worst frame of each pixel column), with the p50, p95 and
 * budget lines. Bars outside the embedded range are dimmed. Clicking a bar zooms the timeline to
 * that frame; the part of the capture the timeline shows is outlined.
 */
'use strict';

class FrameGraph extends CanvasView {
    constructor(D, canvas, tooltip, app) {
        super(D, canvas, tooltip, app);
        this.view = null;
        this.cols = null; /* per pixel column: frame index drawn there */
        U.hoverTip(this);
        canvas.addEventListener('click', (ev) => {
            const i = this.frameAt(ev);
            if (i >= 0) this.app.zoomToFrame(i);
        });
        window.addEventListener('resize', () => this.draw());
    }

    setView(t0, t1) {
        this.view = [t0, t1];
        this.draw();
    }

    frameAt(ev) {
        if (!this.cols) return -1;
        const r = this.canvas.getBoundingClientRect();
        const x = Math.floor(ev.clientX - r.left);
        if (x < 0 || x >= this.cols.length) return -1;
        return this.cols[x];
    }

    hover(ev) {
        const i = this.frameAt(ev);
        const f = this.D.frames;
        if (i < 0 || !f) {
            this.tip.style.display = 'none';
            return;
        }
        const inRange = f.start[i] + f.dur[i] >= this.D.start && f.start[i] <= this.D.end;
        U.showTip(this.tip, ev, '<b>Frame ' + (f.first + i) + '</b>: ' + U.fmtNs(f.dur[i]) +
            '<br>p50 ' + U.fmtNs(f.p50) + ', p95 ' + U.fmtNs(f.p95) + ', budget ' + U.fmtNs(this.D.budgetNs) +
            (inRange ? '<br>click to zoom' : '<br>outside the embedded range (see --frames)'));
    }

    draw() {
        const c = this.canvas;
        const W = c.clientWidth || 800, H = c.clientHeight || 90;
        const ctx = U.fitCanvas(c, W, H);
        const D = this.D, f = D.frames;
        ctx.fillStyle = '#18191c';
        ctx.fillRect(0, 0, W, H);
        ctx.font = '11px monospace';
        ctx.textBaseline = 'middle';
        if (!f || !f.n) {
            ctx.fillStyle = '#999';
            ctx.fillText('No frames in this capture (MPROF_FRAME_MARK was never called).', 8, H / 2);
            this.cols = null;
            return;
        }
        const budget = D.budgetNs;
        /* Scale to the frames (outliers past 3x p95 are clipped); include the budget when it is
         * near, else its line sits on the top edge, marked as above the scale. */
        const fit = Math.max(f.p95 * 1.3, Math.min(f.max, f.p95 * 3) * 1.05, 1);
        const top = budget <= fit * 2 ? Math.max(fit, budget * 1.15) : fit;
        const yOf = (v) => H - 2 - Math.min(1, v / top) * (H - 14);
        const n = f.n;
        this.cols = new Int32Array(W).fill(-1);
        const barW = W / n;
        for (let x = 0; x < W; x++) {
            /* Worst frame in this column. */
            const a = Math.floor(x * n / W), b = Math.max(a + 1, Math.floor((x + 1) * n / W));
            let worst = -1;
            for (let i = a; i < b && i < n; i++) if (worst < 0 || f.dur[i] > f.dur[worst]) worst = i;
            if (worst < 0) continue;
            this.cols[x] = worst;
        }
        for (let i = 0; i < n; i++) {
            let x0, w;
            if (barW >= 1) {
                x0 = i * barW;
                w = Math.max(1, barW - (barW > 3 ? 1 : 0));
            } else {
                x0 = Math.floor(i * barW);
                if (this.cols[x0] !== i) continue;
                w = 1;
            }
            const d = f.dur[i];
            const inRange = f.start[i] + d >= D.start && f.start[i] <= D.end;
            const col = d > budget * 2 ? '#e05a4a' : d > budget ? '#e0b43a' : '#4caf50';
            ctx.globalAlpha = inRange ? 1 : 0.35;
            ctx.fillStyle = col;
            const y = yOf(d);
            ctx.fillRect(x0, y, w, H - 2 - y);
        }
        ctx.globalAlpha = 1;
        const line = (v, color, label, slot) => {
            const y = Math.round(yOf(v)) + 0.5;
            ctx.strokeStyle = color;
            ctx.setLineDash([4, 3]);
            ctx.beginPath();
            ctx.moveTo(0, y);
            ctx.lineTo(W, y);
            ctx.stroke();
            ctx.setLineDash([]);
            ctx.fillStyle = color;
            ctx.fillText(label + ' ' + U.fmtNs(v), W - 140 * slot, y - 6);
        };
        line(budget, '#ff6b6b', budget > top ? 'budget (above) ' : 'budget', 1);
        line(f.p95, '#f0c674', 'p95', 2);
        line(f.p50, '#8fd0ff', 'p50', 3);
        ctx.fillStyle = '#ccc';
        ctx.fillText(U.fmtCount(n) + ' frames, max ' + U.fmtNs(f.max), 6, 8);
        if (this.view) {
            /* Outline the frames the timeline shows. */
            const a = Math.max(0, U.upperBound(f.start, this.view[0]) - 1);
            const b = Math.max(a + 1, U.upperBound(f.start, this.view[1]));
            const x0 = a * barW, x1 = Math.max(x0 + 2, b * barW);
            ctx.strokeStyle = 'rgba(140,180,255,0.9)';
            ctx.strokeRect(x0 + 0.5, 0.5, x1 - x0 - 1, H - 1);
            ctx.fillStyle = 'rgba(140,180,255,0.10)';
            ctx.fillRect(x0, 0, x1 - x0, H);
        }
    }
}
