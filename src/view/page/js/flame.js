/*
 * flame.js - a flame graph (icicle, root at the top) of a time range: every call path of zones
 * (thread > outer zone > inner zone ...) becomes a node as wide as the time spent in it within
 * the range. Zones crossing the range's edges count only their part inside it. Click a node to
 * make it the root; click the top bar to go back up.
 */
'use strict';

class FlameGraph {
    constructor(D, canvas, tooltip, app) {
        this.D = D;
        this.canvas = canvas;
        this.tip = tooltip;
        this.app = app;
        this.root = null;
        this.focus = null;
        this.boxes = [];
        this.ROW = 18;
        canvas.addEventListener('mousemove', (ev) => this.hover(ev));
        canvas.addEventListener('mouseleave', () => (this.tip.style.display = 'none'));
        canvas.addEventListener('click', (ev) => {
            const b = this.boxAt(ev);
            if (!b) return;
            this.focus = b.node === this.focus && b.node.parent ? b.node.parent : b.node;
            this.draw();
        });
    }

    static node(name, loc, parent) {
        return { name: name, loc: loc, parent: parent, total: 0, self: 0, count: 0, children: new Map() };
    }

    /* Builds the call tree of [t0, t1]. */
    setRange(t0, t1) {
        const D = this.D;
        const root = FlameGraph.node('all threads', -1, null);
        for (const t of D.tracks) {
            if (!t.n || t.kind === 'lock') continue;
            const tnode = FlameGraph.node(t.name, -2, root);
            const nodeOf = new Int32Array(t.n).fill(-1);
            const nodes = [];
            for (let i = 0; i < t.n; i++) {
                if (t.end[i] < t0 || t.start[i] > t1) continue;
                const p = t.parent[i];
                const pn = p >= 0 && nodeOf[p] >= 0 ? nodes[nodeOf[p]] : tnode;
                const loc = t.loc[i];
                let nd = pn.children.get(loc);
                if (!nd) {
                    nd = FlameGraph.node(D.srclocs[loc].name, loc, pn);
                    pn.children.set(loc, nd);
                    nd.id = nodes.length;
                    nodes.push(nd);
                }
                nodeOf[i] = nd.id;
                const d = Math.min(t.end[i], t1) - Math.max(t.start[i], t0);
                nd.total += d;
                nd.count++;
                if (p < 0) tnode.total += d;
            }
            if (tnode.total > 0) {
                root.children.set('t' + t.index, tnode);
                root.total += tnode.total;
            }
        }
        const fillSelf = (n) => {
            let c = 0;
            for (const ch of n.children.values()) {
                fillSelf(ch);
                c += ch.total;
            }
            n.self = Math.max(0, n.total - c);
        };
        fillSelf(root);
        this.root = root;
        this.focus = root;
        this.draw();
    }

    draw() {
        const c = this.canvas;
        const pw = c.parentElement ? c.parentElement.clientWidth : 0;
        const W = pw > 4 ? pw - 4 : 800; /* hidden: redrawn when its tab opens */
        const depth = (n) => {
            let d = 0;
            for (const ch of n.children.values()) d = Math.max(d, depth(ch));
            return d + 1;
        };
        const root = this.focus || this.root;
        const rows = root ? depth(root) : 1;
        const H = Math.max(60, rows * this.ROW + 24);
        const ctx = U.fitCanvas(c, W, H, true);
        ctx.fillStyle = '#1e1f22';
        ctx.fillRect(0, 0, W, H);
        ctx.font = '11px monospace';
        ctx.textBaseline = 'middle';
        this.boxes = [];
        if (!root || root.total <= 0) {
            ctx.fillStyle = '#999';
            ctx.fillText('No zones in this range.', 8, 20);
            return;
        }
        const scale = W / root.total;
        /* The focused node's ancestors appear as one bar on top. */
        const lay = (n, x, y) => {
            const w = n.total * scale;
            if (w < 0.5) return;
            const rgb = n.loc >= 0 ? this.D.srclocs[n.loc].rgb : 0x555a64;
            ctx.fillStyle = U.rgbCss(rgb);
            ctx.fillRect(x, y, Math.max(0.5, w - 1), this.ROW - 1);
            this.boxes.push({ x: x, y: y, w: w, node: n });
            if (w > 30) {
                ctx.fillStyle = U.textOn(rgb);
                ctx.fillText(U.fitText(ctx, n.name + ' ' + U.fmtNs(n.total), w - 6, 6.6), x + 3, y + this.ROW / 2);
            }
            let cx = x;
            const kids = Array.from(n.children.values()).sort((a, b) => b.total - a.total);
            for (const ch of kids) {
                lay(ch, cx, y + this.ROW);
                cx += ch.total * scale;
            }
        };
        lay(root, 0, 0);
        ctx.fillStyle = '#888';
        ctx.fillText(root === this.root ? 'click a node to zoom into it' : 'click the top bar to go back up', 6, H - 9);
    }

    boxAt(ev) {
        const r = this.canvas.getBoundingClientRect();
        const x = ev.clientX - r.left, y = ev.clientY - r.top;
        for (const b of this.boxes) if (x >= b.x && x < b.x + b.w && y >= b.y && y < b.y + this.ROW) return b;
        return null;
    }

    hover(ev) {
        const b = this.boxAt(ev);
        if (!b) {
            this.tip.style.display = 'none';
            return;
        }
        const n = b.node;
        const pct = this.root.total ? (100 * n.total / this.root.total).toFixed(1) : '0';
        let h = '<b>' + U.escapeHtml(n.name) + '</b><br>total ' + U.fmtNs(n.total) + ' (' + pct + ' %)<br>self ' + U.fmtNs(n.self);
        if (n.count) h += '<br>' + U.fmtCount(n.count) + ' zones';
        if (n.loc >= 0) {
            const sl = this.D.srclocs[n.loc];
            h += '<br><span class="dim">' + U.escapeHtml(sl.file + ':' + sl.line) + '</span>';
        }
        this.tip.innerHTML = h;
        this.tip.style.display = 'block';
        this.tip.style.left = Math.min(ev.clientX + 12, window.innerWidth - this.tip.offsetWidth - 4) + 'px';
        this.tip.style.top = ev.clientY + 12 + 'px';
    }
}
