/*
 * cmd_history.c - `mprof history --store URL`: the stored runs newest first, as a table, as JSON
 * (mprof.history.v1) or as a self-contained HTML trend page.
 *
 * The page is drawn here as inline SVG (p50/p95 frame time over the runs, and each top zone's
 * self time per frame over the runs), so it needs no library and no network: like `mprof view`,
 * its Content-Security-Policy allows nothing but its own inline script and style. The small
 * script only switches between zones and reports in #mprof-status what it found, which the
 * headless-browser test reads.
 */
#include "mprof_tool.h"
#include "store/ci_hooks.h"
#include "store/store.h"
#include "util/json_out.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const help =
    "usage: mprof history --store URL [--host H] [--build-type T] [--last N] [--json]\n"
    "                     [--html OUT]\n"
    "\n"
    "Lists the runs of a run store, newest first: start time, git SHA, branch, host, build type,\n"
    "frames, p50 and p95 frame time, verdict.\n"
    "\n"
    "Options:\n"
    "  --store URL       sqlite:PATH or postgresql://... (docs/STORE.md); default $MPROF_STORE\n"
    "  --host H          only runs of this host\n"
    "  --build-type T    only runs of this build type\n"
    "  --last N          at most N runs (default 50)\n"
    "  --json            print JSON (schema mprof.history.v1) instead of the table\n"
    "  --html OUT        also write a self-contained HTML trend page (p50/p95 over commits, the\n"
    "                    top zones' self time per frame over commits); opens without network\n"
    "  -h, --help        show this help\n"
    "\n"
    "Exit status: 0 ok; 2 usage error or a bad URL; 3 the page cannot be written; 4 the store\n"
    "cannot be reached, its schema is newer than this mprof, or a stored value is malformed.\n";

#define MAX_ZONE_CHARTS 5

/* A string that says something, or null. */
static void str_or_null(mprof_json *j, const char *k, const char *v)
{
    if (v && *v)
        mprof_json_str(j, k, v);
    else
        mprof_json_null(j, k);
}

static void num_or_null(mprof_json *j, const char *k, int have, double v)
{
    if (have && isfinite(v))
        mprof_json_num(j, k, v);
    else
        mprof_json_null(j, k);
}

static void run_json(mprof_json *j, const mprof_store_run *r)
{
    mprof_json_obj_begin(j, NULL);
    mprof_json_num(j, "id", (double)r->id);
    str_or_null(j, "gitSha", r->git_sha);
    str_or_null(j, "branch", r->branch);
    str_or_null(j, "command", r->command);
    str_or_null(j, "host", r->host);
    str_or_null(j, "cpu", r->cpu);
    str_or_null(j, "buildType", r->build_type);
    str_or_null(j, "startTime", r->start_time);
    str_or_null(j, "recordedAt", r->recorded_at);
    str_or_null(j, "verdict", r->verdict);
    str_or_null(j, "artifactPath", r->artifact_path);
    num_or_null(j, "artifactBytes", r->artifact_bytes >= 0, (double)r->artifact_bytes);
    mprof_json_num(j, "frameCount", (double)r->frame_count);
    mprof_json_num(j, "repetitions", (double)r->n_reps_stored);
    int hf = r->frame_count > 0;
    num_or_null(j, "p50FrameTimeMs", hf, r->p50_ms);
    num_or_null(j, "p90FrameTimeMs", hf, r->p90_ms);
    num_or_null(j, "p95FrameTimeMs", hf, r->p95_ms);
    num_or_null(j, "p99FrameTimeMs", hf, r->p99_ms);
    num_or_null(j, "meanFrameTimeMs", hf, r->mean_ms);
    num_or_null(j, "onCpuMsPerFrame", r->have_cpu, r->on_cpu_mean_ms);
    num_or_null(j, "offCpuMsPerFrame", r->have_cpu, r->off_cpu_mean_ms);
    mprof_json_arr_begin(j, "zones");
    for (size_t z = 0; r->n_reps && z < r->reps[0].n_zones; z++) {
        mprof_json_obj_begin(j, NULL);
        mprof_json_str(j, "name", r->reps[0].zones[z].name);
        num_or_null(j, "selfMsPerFrame", 1, r->reps[0].zones[z].self_mean_ms);
        mprof_json_obj_end(j);
    }
    mprof_json_arr_end(j);
    mprof_json_obj_end(j);
}

static void print_json(const char *display, const mprof_store_run *runs, size_t n)
{
    mprof_json j;
    mprof_json_init(&j, stdout, 1);
    mprof_json_obj_begin(&j, NULL);
    mprof_json_str(&j, "schema", "mprof.history.v1");
    mprof_json_str(&j, "store", display);
    mprof_json_arr_begin(&j, "runs");
    for (size_t i = 0; i < n; i++)
        run_json(&j, &runs[i]);
    mprof_json_arr_end(&j);
    mprof_json_obj_end(&j);
}

static void print_table(const mprof_store_run *runs, size_t n)
{
    printf("%6s  %-24s  %-12s  %-14s  %-16s  %-10s  %8s  %10s  %10s  %s\n", "run", "start time",
           "git sha", "branch", "host", "build", "frames", "p50 ms", "p95 ms", "verdict");
    /* A store's rows were written by whoever could write to it: escaped (tool_text). */
    for (size_t i = 0; i < n; i++) {
        const mprof_store_run *r = &runs[i];
        char t[25], g[13], b[15], h[17], bt[11], v[64];
        printf("%6lld  %-24.24s  %-12.12s  %-14.14s  %-16.16s  %-10.10s  %8zu  %10.4g  %10.4g  %s\n",
               (long long)r->id, r->start_time ? tool_text(r->start_time, t, sizeof t) : "-",
               r->git_sha ? tool_text(r->git_sha, g, sizeof g) : "-",
               r->branch ? tool_text(r->branch, b, sizeof b) : "-",
               r->host && *r->host ? tool_text(r->host, h, sizeof h) : "-",
               r->build_type && *r->build_type ? tool_text(r->build_type, bt, sizeof bt) : "-",
               r->frame_count, r->frame_count ? r->p50_ms : 0.0, r->frame_count ? r->p95_ms : 0.0,
               tool_text(r->verdict, v, sizeof v));
    }
    if (n == 0)
        printf("(no runs)\n");
}

/* ---- the HTML page ------------------------------------------------------------------------ */

static void html_text(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default: fputc(*s, f);
        }
    }
}

static const char *short_sha(const char *sha, char *buf, size_t n)
{
    snprintf(buf, n, "%.10s", sha && *sha ? sha : "?");
    return buf;
}

#define CW 900.0
#define CH 260.0
#define ML 70.0
#define MR 20.0
#define MT 20.0
#define MB 60.0

/* One line chart. ys[k][i] is series k at run i (oldest first); NAN = no value. */
static void chart(FILE *f, const char *id, const char *title, const mprof_store_run *const *order,
                  size_t n, double *const *ys, const char *const *labels, int n_series)
{
    static const char *const colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"};
    double hi = 0;
    for (int k = 0; k < n_series; k++)
        for (size_t i = 0; i < n; i++)
            if (isfinite(ys[k][i]) && ys[k][i] > hi)
                hi = ys[k][i];
    if (hi <= 0)
        hi = 1;
    hi *= 1.1;
    fprintf(f, "<figure class=\"chart\" id=\"%s\"><figcaption>", id);
    html_text(f, title);
    fprintf(f, "</figcaption>\n<svg viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" height=\"%.0f\" "
            "role=\"img\">\n", CW, CH, CW, CH);
    double pw = CW - ML - MR, ph = CH - MT - MB;
    fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" class=\"plot\"/>\n",
            ML, MT, pw, ph);
    for (int t = 0; t <= 4; t++) {
        double v = hi * t / 4, y = MT + ph - ph * t / 4;
        fprintf(f, "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" class=\"grid\"/>"
                "<text x=\"%.0f\" y=\"%.1f\" class=\"ytick\">%.4g</text>\n",
                ML, ML + pw, y, y, ML - 6, y + 4, v);
    }
    fprintf(f, "<text x=\"14\" y=\"%.0f\" class=\"ylabel\" transform=\"rotate(-90 14 %.0f)\">ms"
            "</text>\n", MT + ph / 2, MT + ph / 2);
    size_t step = n > 12 ? (n + 11) / 12 : 1;
    for (size_t i = 0; i < n; i++) {
        double x = ML + (n > 1 ? pw * (double)i / (double)(n - 1) : pw / 2);
        if (i % step == 0 || i == n - 1) {
            char b[16];
            fprintf(f, "<text x=\"%.1f\" y=\"%.0f\" class=\"xtick\" transform=\"rotate(30 %.1f "
                    "%.0f)\">", x, MT + ph + 16, x, MT + ph + 16);
            html_text(f, short_sha(order[i]->git_sha, b, sizeof b));
            fputs("</text>\n", f);
        }
    }
    for (int k = 0; k < n_series; k++) {
        fprintf(f, "<polyline class=\"series\" data-series=\"");
        html_text(f, labels[k]);
        fprintf(f, "\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", colors[k % 5]);
        for (size_t i = 0; i < n; i++) {
            if (!isfinite(ys[k][i]))
                continue;
            double x = ML + (n > 1 ? pw * (double)i / (double)(n - 1) : pw / 2);
            double y = MT + ph - ph * ys[k][i] / hi;
            fprintf(f, "%.1f,%.1f ", x, y);
        }
        fputs("\"/>\n", f);
        for (size_t i = 0; i < n; i++) {
            if (!isfinite(ys[k][i]))
                continue;
            double x = ML + (n > 1 ? pw * (double)i / (double)(n - 1) : pw / 2);
            double y = MT + ph - ph * ys[k][i] / hi;
            char b[16];
            fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"><title>", x, y,
                    colors[k % 5]);
            html_text(f, labels[k]);
            fprintf(f, " %.6g ms, run %lld, ", ys[k][i], (long long)order[i]->id);
            html_text(f, short_sha(order[i]->git_sha, b, sizeof b));
            fputs(" ", f);
            html_text(f, order[i]->start_time);
            fputs(" ", f);
            html_text(f, order[i]->verdict);
            fputs("</title></circle>\n", f);
        }
        fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" class=\"legend\" fill=\"%s\">", ML + 10 + 120 * k,
                MT + 14, colors[k % 5]);
        html_text(f, labels[k]);
        fputs("</text>\n", f);
    }
    fputs("</svg></figure>\n", f);
}

static const char page_head[] =
    "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
    "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src "
    "'unsafe-inline'; style-src 'unsafe-inline'; img-src data:\">\n"
    "<title>mprof history</title>\n<style>\n"
    "body{font:14px system-ui,sans-serif;margin:20px;color:#222}\n"
    "figure{margin:0 0 24px 0}figcaption{font-weight:600;margin-bottom:4px}\n"
    ".plot{fill:#fafafa;stroke:#ccc}.grid{stroke:#e4e4e4}\n"
    ".ytick{font-size:11px;text-anchor:end;fill:#555}.xtick{font-size:11px;fill:#555}\n"
    ".ylabel{font-size:12px;fill:#555;text-anchor:middle}.legend{font-size:12px;font-weight:600}\n"
    "table{border-collapse:collapse;font-size:12px}td,th{padding:2px 8px;border-bottom:1px solid "
    "#eee;text-align:left}\n.regression,.failed{color:#b00}.hidden{display:none}\n"
    "</style></head><body>\n";

static const char page_script[] =
    "<script>\n"
    "(function(){\n"
    "  var st=document.getElementById('mprof-status'), errors=[];\n"
    "  window.addEventListener('error',function(e){errors.push(String(e.message));"
    "st.setAttribute('data-errors',errors.join('; '));});\n"
    "  try{\n"
    "    var sel=document.getElementById('zone-select'), charts=document.querySelectorAll("
    "'.zone-chart');\n"
    "    function show(){for(var i=0;i<charts.length;i++){charts[i].classList.toggle('hidden',"
    "sel&&charts[i].getAttribute('data-zone-index')!==sel.value);}}\n"
    "    if(sel){sel.addEventListener('change',show);show();}\n"
    "    var pts=0, lines=document.querySelectorAll('polyline.series');\n"
    "    for(var i=0;i<lines.length;i++){var p=lines[i].getAttribute('points').trim();"
    "if(p)pts+=p.split(/\\s+/).length;}\n"
    "    st.setAttribute('data-series',String(lines.length));\n"
    "    st.setAttribute('data-points',String(pts));\n"
    "    st.setAttribute('data-zone-charts',String(charts.length));\n"
    "    st.setAttribute('data-visible-zone-charts',String(document.querySelectorAll("
    "'.zone-chart:not(.hidden)').length));\n"
    "    st.setAttribute('data-state','ready');\n"
    "  }catch(e){errors.push(String(e));st.setAttribute('data-errors',errors.join('; '));"
    "st.setAttribute('data-state','error');}\n"
    "})();\n"
    "</script>\n";

static int write_html(const char *path, const char *display, const mprof_store_run *runs,
                      size_t n)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    /* Oldest first along the x axis. */
    const mprof_store_run **order = calloc(n ? n : 1, sizeof *order);
    double *p50 = calloc(n ? n : 1, sizeof *p50), *p95 = calloc(n ? n : 1, sizeof *p95);
    double *zv = calloc((n ? n : 1) * MAX_ZONE_CHARTS, sizeof *zv);
    if (!order || !p50 || !p95 || !zv) {
        free(order);
        free(p50);
        free(p95);
        free(zv);
        fclose(f);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        order[i] = &runs[n - 1 - i];
        p50[i] = order[i]->frame_count ? order[i]->p50_ms : NAN;
        p95[i] = order[i]->frame_count ? order[i]->p95_ms : NAN;
    }
    fputs(page_head, f);
    fputs("<h1>mprof history</h1>\n<p>", f);
    html_text(f, display);
    fprintf(f, ": %zu run%s, oldest first along the axis.</p>\n", n, n == 1 ? "" : "s");
    fprintf(f, "<div id=\"mprof-status\" data-state=\"loading\" data-runs=\"%zu\"></div>\n", n);
    double *series[2] = {p50, p95};
    const char *labels[2] = {"p50", "p95"};
    chart(f, "frame-chart", "Frame time over commits (p50, p95)", order, n, series, labels, 2);

    /* The top zones of the newest run, each over every run that has it. */
    const mprof_frames_run *latest = n && runs[0].n_reps ? &runs[0].reps[0] : NULL;
    size_t nz = latest ? latest->n_zones : 0;
    if (nz > MAX_ZONE_CHARTS)
        nz = MAX_ZONE_CHARTS;
    if (nz) {
        fputs("<p><label>Zone: <select id=\"zone-select\">", f);
        for (size_t z = 0; z < nz; z++) {
            fprintf(f, "<option value=\"%zu\">", z);
            html_text(f, latest->zones[z].name);
            fputs("</option>", f);
        }
        fputs("</select></label></p>\n", f);
    } else {
        fputs("<p>No zone has per-frame self times in these runs.</p>\n", f);
    }
    for (size_t z = 0; z < nz; z++) {
        const char *name = latest->zones[z].name;
        double *v = zv + z * (n ? n : 1);
        for (size_t i = 0; i < n; i++) {
            v[i] = NAN;
            const mprof_frames_run *r = order[i]->n_reps ? &order[i]->reps[0] : NULL;
            for (size_t k = 0; r && k < r->n_zones; k++)
                if (strcmp(r->zones[k].name, name) == 0)
                    v[i] = r->zones[k].self_mean_ms;
        }
        char id[32], title[600];
        snprintf(id, sizeof id, "zone-chart-%zu", z);
        snprintf(title, sizeof title, "Self time per frame of zone \"%.500s\" over commits", name);
        fprintf(f, "<div class=\"zone-chart\" data-zone-index=\"%zu\">\n", z);
        const char *zl[1] = {name};
        chart(f, id, title, order, n, &v, zl, 1);
        fputs("</div>\n", f);
    }

    fputs("<h2>Runs, newest first</h2>\n<table><tr><th>run</th><th>start time</th><th>git sha"
          "</th><th>branch</th><th>host</th><th>build</th><th>frames</th><th>p50 ms</th><th>p95 "
          "ms</th><th>verdict</th></tr>\n", f);
    for (size_t i = 0; i < n; i++) {
        const mprof_store_run *r = &runs[i];
        fprintf(f, "<tr><td>%lld</td><td>", (long long)r->id);
        html_text(f, r->start_time);
        fputs("</td><td>", f);
        html_text(f, r->git_sha);
        fputs("</td><td>", f);
        html_text(f, r->branch);
        fputs("</td><td>", f);
        html_text(f, r->host);
        fputs("</td><td>", f);
        html_text(f, r->build_type);
        fprintf(f, "</td><td>%zu</td><td>%.4g</td><td>%.4g</td><td class=\"", r->frame_count,
                r->frame_count ? r->p50_ms : 0.0, r->frame_count ? r->p95_ms : 0.0);
        html_text(f, r->verdict);
        fputs("\">", f);
        html_text(f, r->verdict);
        fputs("</td></tr>\n", f);
    }
    fputs("</table>\n", f);
    fputs(page_script, f);
    fputs("</body></html>\n", f);
    free(order);
    free(p50);
    free(p95);
    free(zv);
    return fclose(f) == 0 ? 0 : -1;
}

int cmd_history(int argc, char **argv)
{
    const char *url = getenv("MPROF_STORE"), *html = NULL;
    mprof_store_filter flt = {.last = 50, .with_zone_means = 1};
    int json = 0;
    unsigned long long u;
    tool_args args = tool_args_start("history", help, argc, argv, NULL, 0);
    tool_args_refuse_files(&args, EXIT_USAGE);
    for (const char *a; tool_args_option(&args, &a);) {
        if (strcmp(a, "--json") == 0) {
            json = 1;
        } else if (strcmp(a, "--last") == 0) {
            if (tool_parse_uint("history", a, tool_args_value(&args), 100000, &u))
                return EXIT_USAGE;
            if (u == 0)
                return tool_error("history", EXIT_USAGE, "--last needs at least 1");
            flt.last = (size_t)u;
        } else if (strcmp(a, "--store") == 0 || strcmp(a, "--host") == 0 ||
                   strcmp(a, "--build-type") == 0 || strcmp(a, "--html") == 0) {
            const char *v = tool_args_value(&args);
            if (!v || !*v)
                return tool_error("history", EXIT_USAGE, "%s needs a value", a);
            if (a[2] == 's')
                url = v;
            else if (a[2] == 'b')
                flt.build_type = v;
            else if (a[3] == 'o')
                flt.host = v;
            else
                html = v;
        } else {
            return tool_error("history", EXIT_USAGE, "unknown argument '%s' (see --help)", a);
        }
    }
    if (args.stop)
        return args.code;
    if (!url || !*url)
        return tool_error("history", EXIT_USAGE, "no store: give --store URL (or set MPROF_STORE)");
    char err[2048];
    mprof_store_result rc;
    mprof_store *s = mprof__store_open(url, &rc, err, sizeof err);
    if (!s)
        return tool_error("history", mprof__store_exit_code(rc), "%s", err);
    mprof_store_run *runs = NULL;
    size_t n = 0;
    rc = mprof__store_query(s, &flt, &runs, &n, err, sizeof err);
    if (rc != MPROF_STORE_OK) {
        mprof__store_close(s);
        return tool_error("history", mprof__store_exit_code(rc) == EXIT_IO ? EXIT_STORE
                                                                            : mprof__store_exit_code(rc),
                          "%s", err);
    }
    int code = EXIT_OK;
    if (json) {
        print_json(mprof__store_display(s), runs, n);
    } else {
        print_table(runs, n);
    }
    if (html && write_html(html, mprof__store_display(s), runs, n) != 0) {
        code = tool_error("history", EXIT_IO, "%s: cannot write the page", html);
        tool_remove_partial(html);
    }
    mprof__store_runs_free(runs, n);
    mprof__store_close(s);
    return tool_finish("history", code);
}
