/*
 * layout.js - folding a deep call tree per zone on the served page (docs/VIEW.md): a zone wide
 * enough to carry it, with something loaded under it, gets a marker at its left end; clicking
 * the marker folds its descendants (they are not drawn or hit until it is clicked again), so a
 * deep recursion takes its outermost row only where it is folded and the rest of the track keeps
 * its rows. The marker sits before the zone's label, which starts after it (S.labelInset), so it
 * never covers the first letters of the name. Uses serve.js's hooks: S.hidden (a zone is
 * skipped), S.onZoneClick, S.labelInset, addTrackPainter.
 */
'use strict';

(function () {
    const M = window.MPROF_SERVE, S = M.state;
    const status = document.getElementById('mprof-status');
    const ROW = 18, MARK = 12;
    S.folds = [];
    S.foldMarkers = [];

    const folded = (track, depth, s, e) => S.folds.findIndex((f) => f.track === track && f.depth === depth && f.s === s && f.e === e);
    S.hidden = (track, depth, s, e) => {
        for (const f of S.folds) if (f.track === track && depth > f.depth && s >= f.s && e <= f.e) return true;
        return false;
    };

    /* Whether level (track, depth + 1) of the last answer has anything inside [s, e]. */
    function childIndex() {
        const by = new Map();
        if (S.zones) for (const lv of S.zones.levels) by.set(lv.track + ':' + lv.depth, lv);
        return (track, depth, s, e) => {
            const lv = by.get(track + ':' + (depth + 1));
            if (!lv) return false;
            const inside = (a, stride) => {
                let lo = 0, hi = a.length / stride;
                while (lo < hi) { const mid = (lo + hi) >> 1; if (a[mid * stride + 1] <= s) lo = mid + 1; else hi = mid; }
                return lo < a.length / stride && a[lo * stride] < e;
            };
            return inside(lv.z, 4) || inside(lv.m, 3);
        };
    }

    /* The child index of the last answer, made once per answer. */
    let hasFor = null, hasFn = null;
    function hasChildren() {
        if (hasFor !== S.zones) {
            hasFor = S.zones;
            hasFn = childIndex();
        }
        return hasFn;
    }

    /* Whether a zone drawn w pixels wide carries a marker: wide enough, with something under it
     * (or folded). serve.js starts the zone's label after it (S.labelInset). */
    function marked(track, depth, s, e, w) {
        if (w < 4 * MARK || S.hidden(track, depth, s, e)) return false;
        /* The lanes of an async track hold spans side by side, not inside each other. */
        const t = S.meta && S.meta.tracks.find((q) => q.id === track);
        if (t && t.kind === 'async') return false;
        return folded(track, depth, s, e) >= 0 || hasChildren()(track, depth, s, e);
    }
    S.labelInset = (track, depth, s, e, w) => (marked(track, depth, s, e, w) ? MARK : 0);

    M.addTrackPainter((ctx, o) => {
        S.foldMarkers = [];
        if (!S.zones) return;
        ctx.font = '10px system-ui, sans-serif';
        for (const lv of S.zones.levels) {
            const row = o.rows.find((r) => r.track === lv.track && r.depth === lv.depth);
            if (!row) continue;
            const a = lv.z;
            for (let i = 0; i < a.length; i += 4) {
                const x0 = Math.max(0, o.xOf(a[i])), x1 = Math.min(o.w, o.xOf(a[i + 1]));
                if (!marked(lv.track, lv.depth, a[i], a[i + 1], x1 - x0)) continue;
                const isFolded = folded(lv.track, lv.depth, a[i], a[i + 1]) >= 0;
                ctx.fillStyle = 'rgba(0,0,0,0.55)';
                ctx.fillRect(x0 + 1, row.y + 3, MARK - 2, ROW - 6);
                ctx.fillStyle = '#fff';
                ctx.fillText(isFolded ? '\u25b8' : '\u25be', x0 + 2, row.y + ROW / 2);
                S.foldMarkers.push({ track: lv.track, depth: lv.depth, s: a[i], e: a[i + 1], x: x0 + MARK / 2, y: row.y + ROW / 2, folded: isFolded });
            }
        }
        status.dataset.foldMarkers = String(S.foldMarkers.length);
    });

    S.onZoneClick = (z, x) => {
        const mk = S.foldMarkers.find((m) => m.track === z.track && m.depth === z.depth && m.s === z.s && Math.abs(x - m.x) <= MARK / 2);
        if (!mk) return false;
        const k = folded(z.track, z.depth, mk.s, mk.e);
        if (k >= 0) S.folds.splice(k, 1);
        else S.folds.push({ track: z.track, depth: z.depth, s: mk.s, e: mk.e });
        status.dataset.folds = String(S.folds.length);
        return true;
    };
})();
