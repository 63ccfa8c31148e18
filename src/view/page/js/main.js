/*
 * main.js - builds the page from the embedded document: header and range notice, frame graph,
 * timeline, and the tabs (statistics, flame graph, memory, locks, messages, comparison, info).
 *
 * The page reports how it went in #mprof-status (data-state "ok" or "error", data-tracks,
 * data-zones, data-errors) and in document.title, so a headless browser test can read the
 * outcome with --dump-dom. Script errors anywhere are caught and counted there.
 */
'use strict';

const Status = {
    errors: [],
    el: null,
    set(fields) {
        const el = document.getElementById('mprof-status');
        for (const k in fields) el.setAttribute('data-' + k, String(fields[k]));
        el.setAttribute('data-errors', String(this.errors.length));
        if (this.errors.length) {
            el.setAttribute('data-state', 'error');
            el.textContent = this.errors.join('\n');
        }
    }
};
window.addEventListener('error', (ev) => {
    Status.errors.push(String(ev.message || ev.error || 'script error'));
    Status.set({});
    document.title = 'mprof view: error';
});

class App {
    constructor(D) {
        this.D = D;
        this.tip = document.getElementById('tooltip');
        this.timeline = new Timeline(D, document.getElementById('timeline'), this.tip, this);
        this.frameGraph = new FrameGraph(D, document.getElementById('framegraph'), this.tip, this);
        this.rangeLabel = 'whole embedded range';
        this.range = [D.start, D.end];
        this.buildHeader();
        this.buildTabs();
        this.frameGraph.setView(D.start, D.end);
        this.setRange(D.start, D.end, 'whole embedded range', D.range.mode === 'all');
    }

    buildHeader() {
        const D = this.D, c = D.capture, r = D.range;
        document.getElementById('title').textContent = (c.app ? c.app + ' \u2014 ' : '') + (c.file || 'capture');
        const f = D.frames;
        const summary = [];
        if (f && f.n) summary.push(U.fmtCount(f.n) + ' frames, p50 ' + U.fmtNs(f.p50) + ', p95 ' + U.fmtNs(f.p95) + ', max ' + U.fmtNs(f.max));
        summary.push(U.fmtCount(D.zoneCount) + ' zones on ' + D.tracks.length + ' tracks');
        document.getElementById('summary').textContent = summary.join(' \u00b7 ');
        const notice = document.getElementById('notice');
        if (r.omitted_zones || r.note) {
            notice.textContent = (r.note || '') + (r.omitted_zones ? ' Left out: ' + U.fmtCount(r.omitted_zones) + ' of ' + U.fmtCount(c.zones || 0) + ' zones.' : '');
            notice.hidden = false;
        }
        const budget = document.getElementById('budget');
        budget.value = (D.budgetNs / 1e6).toFixed(1);
        budget.addEventListener('change', () => {
            const v = Number(budget.value);
            if (v > 0) {
                D.budgetNs = v * 1e6;
                this.frameGraph.draw();
                this.timeline.requestDraw();
            }
        });
    }

    buildTabs() {
        const D = this.D;
        const tabs = [['stats', 'Statistics'], ['flame', 'Flame graph']];
        if (D.memory) tabs.push(['memory', 'Memory']);
        if (D.locks.length) tabs.push(['locks', 'Locks']);
        if (D.messages && D.messages.n) tabs.push(['messages', 'Messages']);
        if (D.system && D.system.samples) tabs.push(['samples', 'Samples']);
        if (D.diff) tabs.push(['diff', 'Comparison']);
        tabs.push(['info', 'Info']);
        const nav = document.getElementById('tabs');
        const panel = document.getElementById('panel');
        this.panes = {};
        for (const [id, label] of tabs) {
            const b = U.el('button', { text: label, 'data-tab': id });
            b.addEventListener('click', () => this.showTab(id));
            nav.appendChild(b);
            const pane = U.el('div', { class: 'pane', id: 'pane-' + id });
            pane.hidden = true;
            panel.appendChild(pane);
            this.panes[id] = pane;
        }
        this.rangeInfo = U.el('span', { class: 'range-info' });
        const useView = U.el('button', { text: 'Use view', title: 'Compute statistics and flame graph over what the timeline shows' });
        useView.addEventListener('click', () => this.setRange(this.timeline.t0, this.timeline.t1, 'timeline view'));
        const all = U.el('button', { text: 'Whole range' });
        all.addEventListener('click', () => {
            this.timeline.sel = null;
            this.timeline.requestDraw();
            this.setRange(D.start, D.end, 'whole embedded range', D.range.mode === 'all');
        });
        nav.appendChild(U.el('span', { class: 'spacer' }));
        nav.appendChild(this.rangeInfo);
        if (D.zoneStats && D.range.mode !== 'all') {
            /* Part of the capture is embedded: its statistics still cover every zone. */
            const cap = U.el('button', { text: 'Whole capture', title: 'Statistics of every zone of the capture, embedded or not' });
            cap.addEventListener('click', () => this.stats.setRange(D.start, D.end, '', true));
            nav.appendChild(cap);
        }
        nav.appendChild(useView);
        nav.appendChild(all);

        this.stats = new StatsTable(D, this.panes.stats, this);
        const flameCanvas = U.el('canvas', { id: 'flame' });
        this.panes.flame.appendChild(flameCanvas);
        this.flame = new FlameGraph(D, flameCanvas, this.tip, this);
        if (this.panes.samples) this.samples = new SampleFlame(D, this.panes.samples, this.tip);
        if (this.panes.memory) Panels.memory(D, this.panes.memory);
        if (this.panes.locks) Panels.locks(D, this.panes.locks, this);
        if (this.panes.messages) Panels.messages(D, this.panes.messages, this);
        if (this.panes.diff) Panels.diff(D, this.panes.diff);
        Panels.info(D, this.panes.info);
        this.showTab(D.diff ? 'diff' : 'stats');
    }

    showTab(id) {
        for (const k in this.panes) this.panes[k].hidden = k !== id;
        for (const b of document.querySelectorAll('#tabs button[data-tab]')) b.classList.toggle('active', b.getAttribute('data-tab') === id);
        this.tab = id;
        if (id === 'flame') this.flame.draw();
        if (id === 'samples') this.samples.draw();
        for (const c of this.panes[id].querySelectorAll('canvas.series')) if (c.mprofDraw) c.mprofDraw();
    }

    /* Statistics and flame graph follow this range. */
    /* whole: statistics of the whole capture (the document's figures). */
    setRange(t0, t1, label, whole) {
        this.range = [t0, t1];
        this.rangeLabel = label;
        this.rangeInfo.textContent = label + ': ' + U.fmtNs(t1 - t0);
        this.stats.setRange(t0, t1, label, whole);
        this.flame.setRange(t0, t1);
        if (this.samples) this.samples.setRange(t0, t1);
    }

    zoomToFrame(i) {
        const f = this.D.frames;
        const s = f.start[i], e = s + f.dur[i];
        if (e < this.D.start || s > this.D.end) {
            this.flash('Frame ' + (f.first + i) + ' is outside the embedded range; run mprof view --frames ' + (f.first + i) + ':' + (f.first + i + 1));
            return;
        }
        this.timeline.zoomTo(s, e);
        this.timeline.sel = [s, e];
        this.setRange(s, e, 'frame ' + (f.first + i));
    }

    scrollToTrack(t) {
        let y = 0;
        for (const o of this.D.tracks) {
            if (o === t) break;
            y += this.timeline.trackHeight(o);
        }
        t.collapsed = false;
        this.timeline.scrollY = y;
        this.timeline.requestDraw();
    }

    flash(text) {
        const n = document.getElementById('notice');
        n.textContent = text;
        n.hidden = false;
    }

    onViewChanged(t0, t1) {
        this.frameGraph.setView(t0, t1);
    }

    onSelection(t0, t1) {
        if (t0 === null) this.setRange(this.D.start, this.D.end, 'whole embedded range', this.D.range.mode === 'all');
        else this.setRange(t0, t1, 'selection');
    }

    onZoneSelected(t, i) {
        const D = this.D;
        const sl = D.srclocs[t.loc[i]];
        const d = document.getElementById('zone-detail');
        if (t.async) {
            const a = t.async;
            d.textContent = Data.zoneName(D, t, i) + ' \u2014 ' + U.fmtNs(t.dur[i]) + ' \u2014 async ' + t.name + ', lane ' + t.depth[i] +
                ' \u2014 begun on ' + a.begin[i] + ', ' + (a.end[i] === null ? 'open at the end of the capture' : 'ended on ' + a.end[i]);
            return;
        }
        d.textContent = Data.zoneName(D, t, i) + ' \u2014 ' + U.fmtNs(t.dur[i]) + ' (self ' + U.fmtNs(t.self[i]) + ') \u2014 ' + sl.file + ':' + sl.line + ' \u2014 ' + Data.trackLabel(D, t);
    }

    onDrawn(drawn) {
        const el = document.getElementById('mprof-status');
        el.setAttribute('data-drawn-zones', String(drawn.zones));
        el.setAttribute('data-merged-zones', String(drawn.merged));
        el.setAttribute('data-draw-ms', drawn.ms.toFixed(1));
    }
}

/* The page address may carry a starting state: #view=T0:T1 (ns), #frame=N, #tab=flame,
 * #select=T0:T1, joined with '&'. Used for links to a moment and by the browser test. */
function applyHash(app, D) {
    const h = (window.location.hash || '').replace(/^#/, '');
    for (const part of h.split('&')) {
        const [k, v] = part.split('=');
        if (!v) continue;
        const ab = v.split(':').map(Number);
        if (k === 'view' && ab.length === 2 && ab[1] > ab[0]) app.timeline.setView(ab[0], ab[1], false);
        else if (k === 'select' && ab.length === 2 && ab[1] > ab[0]) {
            app.timeline.sel = [ab[0], ab[1]];
            app.setRange(ab[0], ab[1], 'selection');
        } else if (k === 'frame' && D.frames && ab[0] - D.frames.first >= 0 && ab[0] - D.frames.first < D.frames.n) {
            app.zoomToFrame(ab[0] - D.frames.first);
            app.timeline.v0 = app.timeline.t0;
            app.timeline.v1 = app.timeline.t1;
        } else if (k === 'tab' && app.panes[v]) app.showTab(v);
    }
}

function mprofMain() {
    const dataEl = document.getElementById('mprof-data');
    let D;
    try {
        D = Data.load(JSON.parse(dataEl.textContent));
    } catch (e) {
        Status.errors.push('data: ' + e.message);
        Status.set({ state: 'error' });
        document.title = 'mprof view: error';
        document.getElementById('notice').textContent = 'Cannot read the embedded capture data: ' + e.message;
        document.getElementById('notice').hidden = false;
        return;
    }
    const app = new App(D);
    window.mprofApp = app;
    applyHash(app, D);
    /* Draw once now so the status reflects a real render even before the first animation frame. */
    app.timeline.draw();
    app.frameGraph.draw();
    const kinds = {};
    for (const t of D.tracks) kinds[t.kind] = (kinds[t.kind] || 0) + 1;
    Status.set({
        state: Status.errors.length ? 'error' : 'ok',
        tracks: D.tracks.length,
        'track-names': D.tracks.map((t) => t.name).join('|'),
        'track-kinds': Object.keys(kinds).map((k) => k + ':' + kinds[k]).join(','),
        zones: D.zoneCount,
        'async-tracks': D.tracks.filter((t) => t.async).length,
        'async-spans': D.asyncCount,
        frames: D.frames ? D.frames.n : 0,
        plots: D.plots.length,
        messages: D.messages ? D.messages.n : 0,
        locks: D.locks.length,
        memory: D.memory ? 1 : 0,
        diff: D.diff ? 1 : 0,
        'stats-rows': app.stats.rows.length
    });
    /* A capture of several processes: their header rows, as drawn (timeline.js). */
    if (D.processes)
        Status.set({
            processes: D.processes.length,
            'process-headers': app.timeline.trackRows().filter((r) => !r.track).map((r) => Data.processHeader(D, r.proc)).join('|')
        });
    if (!Status.errors.length) document.title = 'mprof view: ' + (D.capture.file || 'capture');
}

mprofMain();
