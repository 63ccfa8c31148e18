/*
 * data.js - turns the embedded report JSON (schema in docs/VIEW.md) into typed arrays the
 * views can search quickly.
 *
 * The JSON stores each track's zones sorted by start time (parents before their children at the
 * same start), with starts delta-coded. Here every track gets:
 *   start, dur, end (Float64Array), depth (Uint16Array), loc (Int32Array), parent (Int32Array,
 *   -1 for roots), self (Float64Array: duration minus the children's durations),
 *   levels[d] = {s, e, idx}: the zones at depth d in start order. Zones at one depth never
 *   overlap, so both s and e are sorted, which lets the timeline binary-search what is visible.
 */
'use strict';

const Data = {};

/* Undoes the delta coding of a timestamp array. */
Data.undelta = function (arr) {
    const out = new Float64Array(arr ? arr.length : 0);
    let t = 0;
    for (let i = 0; i < out.length; i++) {
        t += arr[i];
        out[i] = t;
    }
    return out;
};

Data.sparseMap = function (pairs) {
    const m = new Map();
    if (pairs) for (const p of pairs) m.set(p[0], p[1]);
    return m;
};

Data.decodeTrack = function (t, index) {
    const z = t.zones || { start: [], dur: [], depth: [], loc: [] };
    const n = z.dur.length;
    if (z.start.length !== n || z.depth.length !== n || z.loc.length !== n)
        throw new Error('track "' + t.name + '": zone arrays differ in length');
    const start = Data.undelta(z.start);
    const dur = Float64Array.from(z.dur);
    const end = new Float64Array(n);
    const depth = Uint16Array.from(z.depth);
    const loc = Int32Array.from(z.loc);
    const parent = new Int32Array(n);
    const self = new Float64Array(n);
    let maxDepth = -1;
    const counts = [];
    const stack = [];
    for (let i = 0; i < n; i++) {
        end[i] = start[i] + dur[i];
        self[i] = dur[i];
        const d = depth[i];
        if (d > maxDepth) maxDepth = d;
        counts[d] = (counts[d] || 0) + 1;
        stack.length = Math.min(stack.length, d);
        /* Lock tracks put one thread per depth row and async tracks one lane per depth row:
         * spans there have no parents. */
        const p = d > 0 && stack.length >= d && t.kind !== 'lock' && t.kind !== 'async' ? stack[d - 1] : -1;
        parent[i] = p;
        if (p >= 0) self[p] -= dur[i];
        stack[d] = i;
    }
    const levels = [];
    for (let d = 0; d <= maxDepth; d++) {
        const c = counts[d] || 0;
        levels.push({ s: new Float64Array(c), e: new Float64Array(c), idx: new Int32Array(c), n: 0 });
    }
    for (let i = 0; i < n; i++) {
        const l = levels[depth[i]];
        l.s[l.n] = start[i];
        l.e[l.n] = end[i];
        l.idx[l.n] = i;
        l.n++;
    }
    /* A zone that outlives its successor at the same depth (only in a malformed capture) would
     * break the sorted-end invariant; clamp so the binary searches stay valid. */
    for (const l of levels) for (let k = 1; k < l.n; k++) if (l.e[k] < l.e[k - 1]) l.e[k] = l.e[k - 1];
    return {
        index: index,
        name: t.name || ('track ' + index),
        kind: t.kind || 'thread',
        tid: t.tid,
        process: t.process !== undefined ? t.process : -1, /* a capture of several processes */
        rows: t.rows || null,
        n: n,
        start: start, dur: dur, end: end, depth: depth, loc: loc, parent: parent, self: self,
        levels: levels,
        maxDepth: maxDepth,
        unfinished: new Set(t.unfinished || []),
        texts: Data.sparseMap(t.text),
        names: Data.sparseMap(t.name_override),
        values: Data.sparseMap(t.value),
        collapsed: false
    };
};

/* Parses and validates the report object; throws with a message saying what is wrong. */
Data.load = function (raw) {
    if (!raw || raw.schema !== 'mprof-view') throw new Error('not an mprof view document');
    if (raw.version !== 1) throw new Error('unsupported view document version ' + raw.version);
    const D = {
        raw: raw,
        capture: raw.capture || {},
        range: raw.range || {},
        budgetNs: raw.budget_ns || 16666667,
        srclocs: (raw.srclocs || []).map((s) => ({
            name: s[0] || '?', func: s[1] || '', file: s[2] || '', line: s[3] || 0, color: s[4] || 0,
            process: s[5] !== undefined ? s[5] : -1
        })),
        /* A capture of several processes: each with a header row over its thread tracks. */
        processes: Array.isArray(raw.processes) && raw.processes.length > 1 ? raw.processes.map((p) => ({
            index: p.index, pid: p.pid, name: p.name || '', threads: p.threads || 0, endedBy: p.ended_by || null, collapsed: false
        })) : null,
        tracks: [],
        zoneCount: 0,
        frames: null,
        frameSets: [],
        messages: null,
        plots: [],
        locks: raw.locks || [],
        memory: raw.memory || null,
        diff: raw.diff || null,
        /* The whole capture's zone figures, computed by the one definition of mprof report
         * (analysis/site_stats.h): rows [srcloc, count, total, self, min, max, mean, p50, p95,
         * in_frames]. */
        zoneStats: raw.zone_stats || null
    };
    for (const s of D.srclocs) s.rgb = require_rgb(s);
    /* Message colors come with the document (mprof_log_level_color in the public header). */
    if (Array.isArray(raw.level_colors) && raw.level_colors.length === 7)
        U.LEVEL_COLORS = raw.level_colors.map(U.rgbCss);
    (raw.tracks || []).forEach((t, i) => {
        const tr = Data.decodeTrack(t, i);
        for (let k = 0; k < tr.n; k++)
            if (tr.loc[k] < 0 || tr.loc[k] >= D.srclocs.length)
                throw new Error('track "' + tr.name + '": zone ' + k + ' has unknown srcloc ' + tr.loc[k]);
        D.tracks.push(tr);
        D.zoneCount += tr.n;
    });
    const decodeFrames = (f) => {
        const start = Data.undelta(f.start);
        const dur = Float64Array.from(f.dur || []);
        const sorted = Float64Array.from(dur).sort();
        return {
            name: f.name || 'Frame', start: start, dur: dur, n: dur.length,
            first: f.first || 0,
            p50: U.percentile(sorted, 50), p95: U.percentile(sorted, 95), p99: U.percentile(sorted, 99),
            max: sorted.length ? sorted[sorted.length - 1] : 0
        };
    };
    if (raw.frames) D.frames = decodeFrames(raw.frames);
    for (const f of raw.frame_sets || []) D.frameSets.push(decodeFrames(f));
    if (raw.messages) {
        const m = raw.messages;
        D.messages = {
            ts: Data.undelta(m.ts), level: Uint8Array.from(m.level), track: Int32Array.from(m.track),
            text: m.text, n: m.text.length
        };
    }
    for (const p of raw.plots || []) {
        const ts = Data.undelta(p.ts);
        const v = Float64Array.from(p.value);
        let lo = Infinity, hi = -Infinity;
        for (let i = 0; i < v.length; i++) {
            if (v[i] < lo) lo = v[i];
            if (v[i] > hi) hi = v[i];
        }
        D.plots.push({
            name: p.name, format: p.format || 0, style: p.style || 0,
            rgb: p.color ? p.color : U.zoneRgb(0, p.name), ts: ts, v: v, n: v.length,
            min: v.length ? lo : 0, max: v.length ? hi : 0
        });
    }
    Data.decodeAsync(raw.async, D);
    SystemView.decode(raw, D); /* system.js: thread states, CPU plots, samples */
    D.start = D.range.start_ns || 0;
    D.end = D.range.end_ns || D.capture.duration_ns || 1;
    if (D.end <= D.start) D.end = D.start + 1;
    return D;

    function require_rgb(s) {
        return U.zoneRgb(s.color, s.name);
    }
};

/* The document's async tracks (docs/VIEW.md) become tracks of kind 'async' after the others:
 * a lane is a depth row (the spans of a lane never overlap), each span name a source location
 * of its own (color 0: hashed from the name), so the timeline draws, merges and picks spans as
 * it does zones. The spans are not zones: D.zoneCount, the zone statistics and the flame graph
 * leave them out; the track's figures of the whole capture (stats, from site_stats.h like a
 * zone's) stay with it for the statistics table. */
Data.decodeAsync = function (a, D) {
    D.asyncCount = 0;
    if (!a || !a.tracks) return;
    const threads = a.threads || [];
    for (const at of a.tracks) {
        const sp = at.spans || { start: [], dur: [], lane: [], name: [], begin: [], end: [] };
        const names = at.names || [];
        const n = sp.dur.length;
        if (sp.start.length !== n || sp.lane.length !== n || sp.name.length !== n || sp.begin.length !== n || sp.end.length !== n)
            throw new Error('async track "' + at.name + '": span arrays differ in length');
        const base = D.srclocs.length;
        for (const nm of names) {
            const sl = { name: nm, func: '', file: '', line: 0, color: 0, async: true };
            sl.rgb = U.zoneRgb(0, nm);
            D.srclocs.push(sl);
        }
        const loc = new Array(n);
        for (let k = 0; k < n; k++) {
            if (!(sp.name[k] >= 0 && sp.name[k] < names.length))
                throw new Error('async track "' + at.name + '": span ' + k + ' has unknown name ' + sp.name[k]);
            loc[k] = base + sp.name[k];
        }
        const tr = Data.decodeTrack({
            kind: 'async', name: at.name, unfinished: at.open || [],
            zones: { start: sp.start, dur: sp.dur, depth: sp.lane, loc: loc }
        }, D.tracks.length);
        tr.async = {
            begin: sp.begin.map((i) => threads[i] !== undefined ? threads[i] : 'thread ' + i),
            end: sp.end.map((i) => i < 0 ? null : threads[i] !== undefined ? threads[i] : 'thread ' + i),
            cut: new Set(at.cut || []),
            stats: at.stats || null, nameStats: at.name_stats || [], locBase: base, openAtEnd: at.open_at_end || 0, unmatchedEnds: at.unmatched_ends || 0,
            reusedIds: at.reused_ids || 0, omitted: at.omitted || 0, lanes: at.lanes || 0
        };
        D.tracks.push(tr);
        D.asyncCount += n;
    }
};

/* "NAME, pid N" of process i of a capture of several, or null. */
Data.processName = function (D, i) {
    const p = D.processes && i >= 0 ? D.processes[i] : null;
    return p ? (p.name || 'process') + ', pid ' + p.pid : null;
};

/* A track's name, with its process when the capture has several: "Main (game, pid 123)". */
Data.trackLabel = function (D, t) {
    const p = Data.processName(D, t.process);
    return p ? t.name + ' (' + p + ')' : t.name;
};

/* The header row of process i: "NAME (pid N)", and why it ended early where it did. */
Data.processHeader = function (D, i) {
    const p = D.processes[i];
    return (p.name || 'process') + ' (pid ' + p.pid + ')' + (p.endedBy ? '  ended early: ' + p.endedBy : '');
};

/* Display name of zone i of track t: its dynamic name when it has one. */
Data.zoneName = function (D, t, i) {
    const n = t.names.get(i);
    return n !== undefined ? n : D.srclocs[t.loc[i]].name;
};

/* Calls fn(track, zoneIndex) for every zone overlapping [t0, t1]. Lock tracks hold waiting and
 * holding spans and async tracks async spans, not zones: they are left out. */
Data.forZonesIn = function (D, t0, t1, fn) {
    for (const t of D.tracks) {
        if (t.kind === 'lock' || t.kind === 'async') continue;
        for (const l of t.levels) {
            let i = U.lowerBound(l.e, t0);
            for (; i < l.n && l.s[i] <= t1; i++) fn(t, l.idx[i]);
        }
    }
};
