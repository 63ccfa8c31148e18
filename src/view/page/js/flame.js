/*
 * flame.js - a flame graph (icicle, root at the top) of a time range: every call path of zones
 * (thread > outer zone > inner zone ...) becomes a node as wide as the time spent in it within
 * the range. Zones crossing the range's edges count only their part inside it. Click a node to
 * make it the root; click the top bar to go back up.
 */
'use strict';

class FlameGraph extends CanvasView {
    constructor(D, canvas, tooltip, app) {
        super(D, canvas, tooltip, app);
        this.root = null;
        this.focus = null;
        this.boxes = [];
        this.ROW = 18;
        U.hoverTip(this);
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
            if (!t.n || t.kind === 'lock' || t.kind === 'async') continue;
            const tnode = FlameGraph.node(Data.trackLabel(D, t), -2, root); /* with its process where there are several */
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
        /* The focused node's ancestors appear as one bar on top. */
        const root = this.focus || this.root;
        const g = U.drawIcicle(this.canvas, root, {
            row: this.ROW,
            below: 24,
            empty: 'No zones in this range.',
            weight: (n) => n.total,
            rgb: (n) => (n.loc >= 0 ? this.D.srclocs[n.loc].rgb : 0x555a64),
            label: (n) => n.name + ' ' + U.fmtNs(n.total),
        });
        this.boxes = g.boxes;
        if (g.empty) return;
        g.ctx.fillStyle = '#888';
        g.ctx.fillText(root === this.root ? 'click a node to zoom into it' : 'click the top bar to go back up', 6, g.H - 9);
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
        U.showTip(this.tip, ev, h);
    }
}
