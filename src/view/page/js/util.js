/*
 * util.js - small helpers shared by every view: time formatting, colors, binary search, DOM,
 * canvases, the tooltip, icicle graphs, and the base of the canvas views.
 *
 * All times in the viewer are nanoseconds since the capture's start, held in plain numbers
 * (doubles are exact for integers below 2^53 ns, about 104 days).
 */
'use strict';

const U = {};

/* Formats a duration in ns with three significant digits and a unit. */
U.fmtNs = function (ns) {
    if (ns === undefined || ns === null || isNaN(ns)) return '-';
    const a = Math.abs(ns);
    if (a < 1e3) return ns.toFixed(0) + ' ns';
    if (a < 1e6) return (ns / 1e3).toPrecision(3) + ' us';
    if (a < 1e9) return (ns / 1e6).toPrecision(3) + ' ms';
    return (ns / 1e9).toPrecision(4) + ' s';
};

/* Formats a timestamp (ns since start) for rulers: seconds with enough decimals for step. */
U.fmtTs = function (ns, stepNs) {
    const s = ns / 1e9;
    let digits = 0;
    while (digits < 9 && Math.pow(10, -digits) * 1e9 > stepNs) digits++;
    return s.toFixed(Math.min(9, digits)) + ' s';
};

U.fmtBytes = function (b) {
    const a = Math.abs(b);
    if (a < 1024) return b.toFixed(0) + ' B';
    if (a < 1048576) return (b / 1024).toFixed(1) + ' KiB';
    if (a < 1073741824) return (b / 1048576).toFixed(1) + ' MiB';
    return (b / 1073741824).toFixed(2) + ' GiB';
};

U.fmtCount = function (n) {
    return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
};

/* Plot values follow the plot's format (mprof_plot_format). */
U.fmtValue = function (v, format) {
    if (format === 2) return U.fmtBytes(v);
    if (format === 3) return v.toFixed(1) + ' %';
    if (Number.isInteger(v)) return U.fmtCount(v);
    return Math.abs(v) >= 100 ? v.toFixed(1) : v.toPrecision(4);
};

/* FNV-1a over the name's UTF-16 units: a stable hue for zones whose color is 0. */
U.hashName = function (s) {
    let h = 2166136261;
    for (let i = 0; i < s.length; i++) {
        h ^= s.charCodeAt(i);
        h = Math.imul(h, 16777619);
    }
    return h >>> 0;
};

U.hslToRgb = function (h, s, l) {
    const k = (n) => (n + h / 30) % 12;
    const a = s * Math.min(l, 1 - l);
    const f = (n) => l - a * Math.max(-1, Math.min(k(n) - 3, Math.min(9 - k(n), 1)));
    return (Math.round(f(0) * 255) << 16) | (Math.round(f(8) * 255) << 8) | Math.round(f(4) * 255);
};

/* 0xRRGGBB for a zone: its own color, or one hashed from its name when the color is 0. */
U.zoneRgb = function (color, name) {
    if (color) return color & 0xffffff;
    const h = U.hashName(name || '?');
    return U.hslToRgb(h % 360, 0.45 + ((h >>> 9) % 20) / 100, 0.42 + ((h >>> 17) % 14) / 100);
};

U.rgbCss = function (rgb) {
    return '#' + (rgb & 0xffffff).toString(16).padStart(6, '0');
};

/* Darker or lighter shade of rgb by factor f (0..2). */
U.shade = function (rgb, f) {
    const c = (v) => Math.max(0, Math.min(255, Math.round(v * f)));
    return (c((rgb >> 16) & 255) << 16) | (c((rgb >> 8) & 255) << 8) | c(rgb & 255);
};

/* Text on rgb: black or white, whichever reads better. */
U.textOn = function (rgb) {
    const r = (rgb >> 16) & 255, g = (rgb >> 8) & 255, b = rgb & 255;
    return 0.299 * r + 0.587 * g + 0.114 * b > 150 ? '#000' : '#fff';
};

/* Message severity colors (mprof_log_level 1..6); the document's level_colors replace these
 * defaults, which are the same values as mprof_log_level_color() in mprof.h. */
U.LEVEL_NAMES = ['', 'trace', 'debug', 'info', 'warn', 'error', 'fatal'];
U.LEVEL_COLORS = ['#808080', '#8c8c8c', '#5fa8d3', '#d0d0d0', '#f2c14e', '#e05a47', '#c2188b'];

/* First index i in sorted arr[lo, hi) with arr[i] >= v. */
U.lowerBound = function (arr, v, lo, hi) {
    lo = lo || 0;
    hi = hi === undefined ? arr.length : hi;
    while (lo < hi) {
        const m = (lo + hi) >>> 1;
        if (arr[m] < v) lo = m + 1;
        else hi = m;
    }
    return lo;
};

/* First index i in sorted arr[lo, hi) with arr[i] > v. */
U.upperBound = function (arr, v, lo, hi) {
    lo = lo || 0;
    hi = hi === undefined ? arr.length : hi;
    while (lo < hi) {
        const m = (lo + hi) >>> 1;
        if (arr[m] <= v) lo = m + 1;
        else hi = m;
    }
    return lo;
};

/* Percentile p (0..100) of a sorted numeric array (nearest rank). */
U.percentile = function (sorted, p) {
    if (!sorted.length) return 0;
    const r = Math.ceil((p / 100) * sorted.length) - 1;
    return sorted[Math.max(0, Math.min(sorted.length - 1, r))];
};

/* Creates an element: U.el('div', {class: 'x'}, [children or text]). */
U.el = function (tag, attrs, children) {
    const e = document.createElement(tag);
    if (attrs) {
        for (const k in attrs) {
            if (k === 'text') e.textContent = attrs[k];
            else if (k.startsWith('on')) e.addEventListener(k.slice(2), attrs[k]);
            else e.setAttribute(k, attrs[k]);
        }
    }
    if (children) {
        for (const c of children) e.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
    }
    return e;
};

U.escapeHtml = function (s) {
    return String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
};

/* Sizes canvas's backing store to cssW x cssH at the device pixel ratio and returns its 2D
 * context. The CSS width always comes from the stylesheet (100 %); setHeight also fixes the CSS
 * height, for canvases whose height follows their content. */
U.fitCanvas = function (canvas, cssW, cssH, setHeight) {
    const dpr = window.devicePixelRatio || 1;
    const w = Math.max(1, Math.floor(cssW)), h = Math.max(1, Math.floor(cssH));
    if (canvas.width !== Math.floor(w * dpr) || canvas.height !== Math.floor(h * dpr)) {
        canvas.width = Math.floor(w * dpr);
        canvas.height = Math.floor(h * dpr);
    }
    if (setHeight) canvas.style.height = h + 'px';
    const ctx = canvas.getContext('2d');
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    return ctx;
};

/* Shows the tooltip tip with html beside the mouse, kept inside the window. */
U.showTip = function (tip, ev, html) {
    tip.innerHTML = html;
    tip.style.display = 'block';
    tip.style.left = Math.min(ev.clientX + 12, window.innerWidth - tip.offsetWidth - 4) + 'px';
    tip.style.top = ev.clientY + 12 + 'px';
};

/* Hover help on view's canvas: view.hover(ev) as the mouse moves, the tooltip hidden when it
 * leaves. */
U.hoverTip = function (view) {
    view.canvas.addEventListener('mousemove', (ev) => view.hover(ev));
    view.canvas.addEventListener('mouseleave', () => (view.tip.style.display = 'none'));
};

/* Draws the icicle graph of root (root on top, each node's children below it from the heaviest,
 * as wide as their weight) on canvas c, as wide as c's parent. o says how: row (pixels a level),
 * below (pixels under the last level), weight(n), rgb(n) and label(n) of a node, and empty (the
 * text when root is missing or weighs nothing). Returns {ctx, H, boxes, empty}: boxes are the
 * nodes drawn ({x, y, w, node}) for hit testing. The zone flame graph and the samples' flame
 * graph are both drawn by it, so they look and read alike. */
U.drawIcicle = function (c, root, o) {
    const pw = c.parentElement ? c.parentElement.clientWidth : 0;
    const W = pw > 4 ? pw - 4 : 800; /* hidden: redrawn when its tab opens */
    const depth = (n) => {
        let d = 0;
        for (const ch of n.children.values()) d = Math.max(d, depth(ch));
        return d + 1;
    };
    const H = Math.max(60, (root ? depth(root) : 1) * o.row + o.below);
    const ctx = U.fitCanvas(c, W, H, true);
    ctx.fillStyle = '#1e1f22';
    ctx.fillRect(0, 0, W, H);
    ctx.font = '11px monospace';
    ctx.textBaseline = 'middle';
    const boxes = [];
    if (!root || o.weight(root) <= 0) {
        ctx.fillStyle = '#999';
        ctx.fillText(o.empty, 8, 20);
        return { ctx: ctx, H: H, boxes: boxes, empty: true };
    }
    const scale = W / o.weight(root);
    const lay = (n, x, y) => {
        const w = o.weight(n) * scale;
        if (w < 0.5) return;
        const rgb = o.rgb(n);
        ctx.fillStyle = U.rgbCss(rgb);
        ctx.fillRect(x, y, Math.max(0.5, w - 1), o.row - 1);
        boxes.push({ x: x, y: y, w: w, node: n });
        if (w > 30) {
            ctx.fillStyle = U.textOn(rgb);
            ctx.fillText(U.fitText(ctx, o.label(n), w - 6, 6.6), x + 3, y + o.row / 2);
        }
        let cx = x;
        for (const ch of Array.from(n.children.values()).sort((a, b) => o.weight(b) - o.weight(a))) {
            lay(ch, cx, y + o.row);
            cx += o.weight(ch) * scale;
        }
    };
    lay(root, 0, 0);
    return { ctx: ctx, H: H, boxes: boxes, empty: false };
};

/* What every canvas view (timeline, frame graph, flame graph) holds: the page's data D, its
 * canvas, the page's one tooltip and the app that it tells of clicks. */
class CanvasView {
    constructor(D, canvas, tooltip, app) {
        this.D = D;
        this.canvas = canvas;
        this.tip = tooltip;
        this.app = app;
    }
}

/* Shortens text to fit maxW pixels in ctx's font; '' when not even one letter fits. */
U.fitText = function (ctx, text, maxW, charW) {
    if (maxW < charW * 2) return '';
    const n = Math.floor(maxW / charW);
    if (text.length <= n) return text;
    return n > 1 ? text.slice(0, n - 1) + '\u2026' : '';
};

/* Ruler step: a 1-2-5 sequence of ns giving at least minPx pixels per step. */
U.niceStep = function (nsPerPx, minPx) {
    const raw = nsPerPx * minPx;
    let p = Math.pow(10, Math.floor(Math.log10(Math.max(raw, 1))));
    for (;;) {
        for (const m of [1, 2, 5]) if (p * m >= raw) return p * m;
        p *= 10;
    }
};
