/*
 * symbolize.c - addresses to function/file/line with elfutils' libdwfl.
 *
 * Why libdwfl: it is the maintained DWARF consumer behind eu-addr2line and systemtap, reads
 * compressed and split debug info, finds separate debug files by build id, and lets us place
 * each module at the address it had in the captured process (dwfl_report_elf), which is exactly
 * what a module map from another process needs. libunwind's symbol lookup only covers the
 * running process; addr2line would mean a process per lookup.
 *
 * Each module is opened on the first address that falls in it. Before it is handed to libdwfl
 * its GNU build id is compared with the recorded one (libelf + dwelf_elf_gnu_build_id); a
 * mismatch means the binary was rebuilt since the capture, and the module is refused.
 * Lookups are memoised in an open-addressing table keyed by address; the strings returned point
 * into libdwfl's tables, which live until mprof_symbolizer_free.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "analysis/symbolize.h"
#include "util/grow.h"

#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct sym_module {
    uint64_t start, size;
    char *path;
    char *build_id;
    int state; /* 0 not opened yet, 1 loaded, -1 missing, -2 build id differs */
    Dwfl_Module *mod;
} sym_module;

typedef struct cache_slot {
    uint64_t addr; /* 0 = empty */
    int found;
    mprof_symbol sym;
} cache_slot;

struct mprof_symbolizer {
    Dwfl *dwfl;
    Dwfl_Callbacks cb;
    sym_module *mods;
    size_t n_mods, cap_mods;
    cache_slot *cache;
    size_t cache_cap, cache_used;
    char *find_debuginfo_path;
    char warning[512];
};

mprof_symbolizer *mprof_symbolizer_new(void)
{
    mprof_symbolizer *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->cb.find_elf = dwfl_build_id_find_elf;
    s->cb.find_debuginfo = dwfl_standard_find_debuginfo;
    s->cb.section_address = dwfl_offline_section_address;
    s->cb.debuginfo_path = &s->find_debuginfo_path;
    s->dwfl = dwfl_begin(&s->cb);
    s->cache_cap = 1024;
    s->cache = calloc(s->cache_cap, sizeof *s->cache);
    if (!s->dwfl || !s->cache) {
        mprof_symbolizer_free(s);
        return NULL;
    }
    return s;
}

void mprof_symbolizer_free(mprof_symbolizer *s)
{
    if (!s)
        return;
    if (s->dwfl)
        dwfl_end(s->dwfl);
    for (size_t i = 0; i < s->n_mods; i++) {
        free(s->mods[i].path);
        free(s->mods[i].build_id);
    }
    free(s->mods);
    free(s->cache);
    free(s);
}

int mprof_symbolizer_add_module(mprof_symbolizer *s, uint64_t start, uint64_t size,
                                const char *path, const char *build_id)
{
    if (!s || !path || !size)
        return 0;
    for (size_t i = 0; i < s->n_mods; i++)
        if (s->mods[i].start == start && strcmp(s->mods[i].path, path) == 0)
            return 0;
    if (MPROF_GROW(s->mods, s->cap_mods, s->n_mods + 1, 16) != 0)
        return -1;
    sym_module *m = &s->mods[s->n_mods];
    memset(m, 0, sizeof *m);
    m->start = start;
    m->size = size;
    m->path = strdup(path);
    m->build_id = strdup(build_id ? build_id : "");
    if (!m->path || !m->build_id) {
        free(m->path);
        free(m->build_id);
        return -1;
    }
    s->n_mods++;
    return 0;
}

static void add_warning(mprof_symbolizer *s, const char *what, const char *path)
{
    size_t l = strlen(s->warning);
    if (l + 8 >= sizeof s->warning)
        return;
    snprintf(s->warning + l, sizeof s->warning - l, "%s%s: %s", l ? "; " : "", path, what);
}

/* Opens m's file, checks its build id, reports it to libdwfl at m->start. */
static void open_module(mprof_symbolizer *s, sym_module *m)
{
    m->state = -1;
    /* The path comes from the capture: never block on a FIFO or read a device. */
    int fd = open(m->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        add_warning(s, "not found (addresses shown as module+offset)", m->path);
        return;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        add_warning(s, "not a regular file", m->path);
        return;
    }
    if (m->build_id[0]) {
        elf_version(EV_CURRENT);
        Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
        const void *id = NULL;
        ssize_t n = elf ? dwelf_elf_gnu_build_id(elf, &id) : -1;
        char hex[129] = "";
        for (ssize_t k = 0; k < n && k < 64; k++)
            snprintf(hex + 2 * k, 3, "%02x", ((const unsigned char *)id)[k]);
        if (elf)
            elf_end(elf);
        if (strcmp(hex, m->build_id) != 0) {
            close(fd);
            m->state = -2;
            add_warning(s, "build id differs from the capture's (rebuilt since?)", m->path);
            return;
        }
    }
    dwfl_report_begin_add(s->dwfl);
    Dwfl_Module *mod = dwfl_report_elf(s->dwfl, m->path, m->path, fd, m->start, false);
    dwfl_report_end(s->dwfl, NULL, NULL);
    if (!mod) {
        add_warning(s, dwfl_errmsg(-1), m->path);
        return;
    }
    m->mod = mod;
    m->state = 1;
}

/* libdwfl finds a CU by address through .debug_aranges, which clang does not emit unless asked
 * (-gdwarf-aranges); elfutils before 0.189 then finds no line at all. Fall back to asking each
 * CU whether it covers the address. Results are cached by the caller, so this runs once per
 * distinct address. */
static void line_by_cu_scan(Dwfl_Module *mod, Dwarf_Addr pc, mprof_symbol *out)
{
    Dwarf_Addr bias = 0;
    Dwarf *dw = dwfl_module_getdwarf(mod, &bias);
    if (!dw)
        return;
    Dwarf_Addr rel = pc - bias;
    Dwarf_CU *cu = NULL;
    Dwarf_Die cudie;
    Dwarf_Half version;
    uint8_t unit_type;
    while (dwarf_get_units(dw, cu, &cu, &version, &unit_type, &cudie, NULL) == 0) {
        if (dwarf_haspc(&cudie, rel) != 1)
            continue;
        Dwarf_Line *ln = dwarf_getsrc_die(&cudie, rel);
        int lineno = 0;
        if (ln && dwarf_lineno(ln, &lineno) == 0) {
            out->file = dwarf_linesrc(ln, NULL, NULL);
            out->line = lineno > 0 ? (uint32_t)lineno : 0;
        }
        return;
    }
}

static sym_module *module_of(mprof_symbolizer *s, uint64_t addr)
{
    for (size_t i = 0; i < s->n_mods; i++)
        if (addr >= s->mods[i].start && addr - s->mods[i].start < s->mods[i].size)
            return &s->mods[i];
    return NULL;
}

static int resolve(mprof_symbolizer *s, uint64_t addr, mprof_symbol *out)
{
    memset(out, 0, sizeof *out);
    sym_module *m = module_of(s, addr);
    if (!m)
        return 0;
    out->module = m->path;
    out->module_offset = addr - m->start;
    if (m->state == 0)
        open_module(s, m);
    if (m->state != 1)
        return 0;
    /* A return address points after the call; the call itself is one byte earlier. */
    Dwarf_Addr pc = addr ? addr - 1 : 0;
    GElf_Off off = 0;
    GElf_Sym sym;
    const char *name = dwfl_module_addrinfo(m->mod, pc, &off, &sym, NULL, NULL, NULL);
    out->function = name;
    Dwfl_Line *line = dwfl_module_getsrc(m->mod, pc);
    if (line) {
        int lineno = 0;
        const char *file = dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL);
        out->file = file;
        out->line = lineno > 0 ? (uint32_t)lineno : 0;
    } else {
        line_by_cu_scan(m->mod, pc, out);
    }
    return name != NULL;
}

static int cache_grow(mprof_symbolizer *s)
{
    size_t nc = s->cache_cap * 2;
    cache_slot *n = calloc(nc, sizeof *n);
    if (!n)
        return -1;
    for (size_t i = 0; i < s->cache_cap; i++) {
        if (!s->cache[i].addr)
            continue;
        size_t h = (size_t)(s->cache[i].addr * 0x9e3779b97f4a7c15ull) & (nc - 1);
        while (n[h].addr)
            h = (h + 1) & (nc - 1);
        n[h] = s->cache[i];
    }
    free(s->cache);
    s->cache = n;
    s->cache_cap = nc;
    return 0;
}

int mprof_symbolizer_add_event(mprof_symbolizer *s, const mprof_event *ev)
{
    char path[4096], bid[160];
    snprintf(path, sizeof path, "%.*s", (int)ev->str_lens[0], ev->strs[0]);
    snprintf(bid, sizeof bid, "%.*s", (int)ev->str_lens[1], ev->strs[1]);
    return mprof_symbolizer_add_module(s, ev->u[0], ev->u[1], path, bid);
}

int mprof_symbolizer_lookup(mprof_symbolizer *s, uint64_t addr, mprof_symbol *out)
{
    if (!s || !addr) {
        memset(out, 0, sizeof *out);
        return 0;
    }
    size_t h = (size_t)(addr * 0x9e3779b97f4a7c15ull) & (s->cache_cap - 1);
    while (s->cache[h].addr) {
        if (s->cache[h].addr == addr) {
            *out = s->cache[h].sym;
            return s->cache[h].found;
        }
        h = (h + 1) & (s->cache_cap - 1);
    }
    int found = resolve(s, addr, out);
    /* Grow at half full. If that fails the table stays valid, just fuller; past three quarters
     * the symbol is returned uncached, so probing always ends at an empty slot. */
    if ((s->cache_used + 1) * 2 > s->cache_cap) {
        if (cache_grow(s) != 0 && (s->cache_used + 1) * 4 > s->cache_cap * 3)
            return found;
        h = (size_t)(addr * 0x9e3779b97f4a7c15ull) & (s->cache_cap - 1);
        while (s->cache[h].addr)
            h = (h + 1) & (s->cache_cap - 1);
    }
    s->cache[h].addr = addr;
    s->cache[h].found = found;
    s->cache[h].sym = *out;
    s->cache_used++;
    return found;
}

static const char *short_path(const char *p)
{
    const char *last = strrchr(p, '/');
    if (!last)
        return p;
    const char *q = last;
    while (q > p && q[-1] != '/')
        q--;
    return q > p ? q : p;
}

const char *mprof_symbolizer_format(mprof_symbolizer *s, uint64_t addr, char *buf, size_t len)
{
    mprof_symbol sym;
    mprof_symbolizer_lookup(s, addr, &sym);
    /* Versioned symbols ("memcpy@@GLIBC_2.14") are shown without their version. */
    int fl = sym.function ? (int)strcspn(sym.function, "@") : 0;
    if (sym.function && sym.file)
        snprintf(buf, len, "%.*s (%s:%u)", fl, sym.function, short_path(sym.file), sym.line);
    else if (sym.function)
        snprintf(buf, len, "%.*s (%s)", fl, sym.function, short_path(sym.module));
    else if (sym.module)
        snprintf(buf, len, "%s+0x%llx", short_path(sym.module),
                 (unsigned long long)sym.module_offset);
    else
        snprintf(buf, len, "0x%llx", (unsigned long long)addr);
    return buf;
}

const char *mprof_symbolizer_frame_name(mprof_symbolizer *s, uint64_t addr, char *buf, size_t len)
{
    mprof_symbol sy = {0};
    if (s && mprof_symbolizer_lookup(s, addr, &sy) && sy.function)
        return sy.function;
    if (sy.module) {
        const char *slash = strrchr(sy.module, '/');
        snprintf(buf, len, "%s+0x%llx", slash ? slash + 1 : sy.module,
                 (unsigned long long)sy.module_offset);
    } else {
        snprintf(buf, len, "0x%llx", (unsigned long long)(addr ? addr - 1 : 0));
    }
    return buf;
}

const char *mprof_symbolizer_warning(const mprof_symbolizer *s)
{
    return s && s->warning[0] ? s->warning : NULL;
}
