/*
 * tool.c - what every command shares on its command line and its terminal: error messages and
 * exit codes, the options loop, option values, escaping of outside strings, strings and error
 * buffers, and the git commit being built.
 */
#include "util/tool.h"

#include "util/utf8.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

int tool_error(const char *cmd, int code, const char *fmt, ...)
{
    /* A message may quote a capture, a peer or a store (a zone name, a refusal, a row): it
     * reaches the terminal escaped, like every other text output. */
    char msg[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "mprof %s: ", cmd);
    tool_put_text(stderr, msg);
    fputc('\n', stderr);
    return code;
}

int tool_finish(const char *cmd, int code)
{
    if (fflush(stdout) != 0 || ferror(stdout))
        return tool_error(cmd, EXIT_IO, "writing the output failed: %s", strerror(errno));
    return code;
}

int tool_is_help(const char *arg)
{
    return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0;
}

tool_args tool_args_start(const char *cmd, const char *help, int argc, char **argv,
                          const char **files, int max_files)
{
    return (tool_args){.cmd = cmd, .help = help, .files = files, .max_files = max_files,
                       .argc = argc, .argv = argv, .i = 1};
}

/* Takes a file into files; a usage error past max_files. */
static int take_file(tool_args *a, const char *file)
{
    if (a->n_files == a->max_files) {
        if (a->max_files == 1)
            tool_error(a->cmd, EXIT_USAGE, "one capture at a time ('%s' and '%s')", a->files[0],
                       file);
        else
            tool_error(a->cmd, EXIT_USAGE, "at most %d captures ('%s' is one too many)",
                       a->max_files, file);
        a->stop = 1;
        a->code = EXIT_USAGE;
        return -1;
    }
    a->files[a->n_files++] = file;
    return 0;
}

void tool_args_refuse_files(tool_args *a, int code)
{
    a->refuse_files = code;
}

/* A file, or a '--', where the command takes none. */
static void refuse(tool_args *a, const char *what)
{
    tool_error(a->cmd, a->refuse_files, "unknown argument '%s' (see --help)", what);
    a->stop = 1;
    a->code = a->refuse_files;
}

int tool_args_next(tool_args *a, const char **out)
{
    while (!a->stop && a->i < a->argc) {
        const char *s = a->argv[a->i++];
        *out = s;
        if (!a->files_only && strcmp(s, "--") == 0) {
            a->files_only = 1; /* every later argument is a file, even one that starts with '-' */
            continue;
        }
        if (a->files_only || s[0] != '-' || !s[1]) {
            if (a->refuse_files) {
                refuse(a, a->files_only ? "--" : s);
                break;
            }
            if (!a->files)
                return TOOL_ARG_FILE;
            if (take_file(a, s) != 0)
                break;
            continue;
        }
        if (tool_is_help(s)) {
            fputs(a->help, stdout);
            a->stop = 1;
            a->code = tool_finish(a->cmd, EXIT_OK);
            break;
        }
        return TOOL_ARG_OPTION;
    }
    if (!a->stop && a->refuse_files && a->files_only)
        refuse(a, "--");
    *out = NULL;
    return TOOL_ARG_END;
}

int tool_args_option(tool_args *a, const char **out)
{
    return tool_args_next(a, out) == TOOL_ARG_OPTION;
}

int tool_args_finish(tool_args *a, int min_files)
{
    if (a->stop)
        return -1;
    a->stop = 1;
    a->code = EXIT_USAGE;
    if (a->n_files < min_files) {
        tool_error(a->cmd, EXIT_USAGE, "no capture file given (see --help)");
        return -1;
    }
    for (int i = 0; i < a->n_files; i++)
        if (tool_check_rereadable(a->cmd, a->files[i]))
            return -1;
    a->stop = 0;
    a->code = EXIT_OK;
    return 0;
}

int tool_args_unknown(const tool_args *a, const char *arg)
{
    return tool_error(a->cmd, EXIT_USAGE, "unknown option '%s' (see --help)", arg);
}

const char *tool_args_value(tool_args *a)
{
    return a->i < a->argc ? a->argv[a->i++] : NULL;
}

int tool_parse_uint(const char *cmd, const char *flag, const char *value, unsigned long long max,
                    unsigned long long *out)
{
    if (!value || !*value) {
        tool_error(cmd, EXIT_USAGE, "%s needs a value", flag);
        return -1;
    }
    char *end;
    errno = 0;
    unsigned long long v = strtoull(value, &end, 10);
    if (errno || *end || value[0] == '-' || v > max) {
        tool_error(cmd, EXIT_USAGE, "%s: '%s' is not a number from 0 to %llu", flag, value, max);
        return -1;
    }
    *out = v;
    return 0;
}

/* The next piece of s[i, n) as it is shown: its bytes in piece (at most 16) and their count;
 * *used gets how many bytes of s it stands for. */
static size_t text_piece(const unsigned char *p, size_t n, size_t i, char *piece, size_t *used)
{
    static const char hex[] = "0123456789abcdef";
    uint32_t cp = 0;
    size_t len;
    *used = 1;
    if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '\\') {
        piece[0] = (char)p[i];
        return 1;
    }
    if (p[i] == '\\') {
        memcpy(piece, "\\\\", 2);
        return 2;
    }
    if (p[i] >= 0x80 && (len = mprof_utf8_char(p + i, n - i, &cp)) > 0) {
        /* A whole character: as it is, or each of its bytes escaped. */
        *used = len;
        if (!mprof_utf8_hidden(cp)) {
            memcpy(piece, p + i, len);
            return len;
        }
        for (size_t k = 0; k < len; k++) {
            piece[4 * k] = '\\';
            piece[4 * k + 1] = 'x';
            piece[4 * k + 2] = hex[p[i + k] >> 4];
            piece[4 * k + 3] = hex[p[i + k] & 15];
        }
        return 4 * len;
    }
    piece[0] = '\\';
    piece[1] = 'x';
    piece[2] = hex[p[i] >> 4];
    piece[3] = hex[p[i] & 15];
    return 4;
}

const char *tool_escape(const void *s, size_t n, char *out, size_t outn)
{
    const unsigned char *p = s;
    size_t o = 0;
    if (!outn)
        return out;
    for (size_t i = 0; i < n && p[i];) {
        char piece[16];
        size_t used, l = text_piece(p, n, i, piece, &used);
        if (o + l >= outn)
            break;
        memcpy(out + o, piece, l);
        o += l;
        i += used;
    }
    out[o] = 0;
    return out;
}

const char *tool_text(const char *s, char *buf, size_t n)
{
    return tool_escape(s ? s : "", s ? strlen(s) : 0, buf, n);
}

void tool_put_text(FILE *f, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    size_t n = strlen((const char *)p);
    for (size_t i = 0; i < n;) {
        char piece[16];
        size_t used, l = text_piece(p, n, i, piece, &used);
        fwrite(piece, 1, l, f);
        i += used;
    }
}

int tool_check_rereadable(const char *cmd, const char *path)
{
    struct stat st;
    if (path && strcmp(path, "-") != 0 && stat(path, &st) == 0 && !S_ISREG(st.st_mode) &&
        !S_ISBLK(st.st_mode)) {
        tool_error(cmd, EXIT_USAGE, "%s is %s, not a file: mprof %s reads the capture more than "
                   "once; save it to a file first", path,
                   S_ISDIR(st.st_mode) ? "a directory" : "a pipe or device", cmd);
        return -1;
    }
    return 0;
}

char *tool_strdup(const char *s)
{
    return s ? tool_strndup(s, strlen(s)) : NULL;
}

char *tool_strndup(const char *s, size_t n)
{
    if (!s)
        return NULL;
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = 0;
    }
    return d;
}

void tool_vappendf(char ***lines, size_t *n, const char *fmt, va_list ap)
{
    char buf[512];
    vsnprintf(buf, sizeof buf, fmt, ap);
    char **grown = realloc(*lines, (*n + 1) * sizeof *grown);
    if (!grown)
        return;
    *lines = grown;
    char *line = tool_strdup(buf);
    if (line)
        (*lines)[(*n)++] = line;
}

void tool_seterr(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* The first line that cmd prints, without its line break; 0 when it ran and exited 0. */
static int first_line(const char *cmd, char *line, size_t n)
{
    line[0] = 0;
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    char *got = fgets(line, (int)n, p);
    if (pclose(p) != 0 || !got) {
        line[0] = 0;
        return -1;
    }
    line[strcspn(line, "\r\n")] = 0;
    return 0;
}

void tool_git_sha(char *out, size_t n, const char **source)
{
    out[0] = 0;
    if (source)
        *source = NULL;
    const char *v = getenv("MPROF_GIT_SHA");
    if (v && *v) {
        snprintf(out, n, "%s", v);
        if (source)
            *source = "environment";
        return;
    }
    char line[128];
    if (first_line("git rev-parse HEAD 2>/dev/null", line, sizeof line) != 0)
        return;
    size_t len = strlen(line);
    if (len < 7 || strspn(line, "0123456789abcdef") != len)
        return;
    snprintf(out, n, "%s", line);
    if (source)
        *source = "git";
}

void tool_git_branch(char *out, size_t n)
{
    out[0] = 0;
    const char *v = getenv("MPROF_GIT_BRANCH");
    if (v && *v) {
        snprintf(out, n, "%s", v);
        return;
    }
    char line[256];
    if (first_line("git rev-parse --abbrev-ref HEAD 2>/dev/null", line, sizeof line) == 0 &&
        strcmp(line, "HEAD") != 0)
        snprintf(out, n, "%s", line);
}

int tool_random_id(char out[33])
{
    unsigned char b[16];
    size_t got = 0;
    while (got < sizeof b) {
        ssize_t n = getrandom(b + got, sizeof b - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    if (got < sizeof b) {
        /* No getrandom (an old kernel): the device itself. */
        int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
        got = 0;
        while (fd >= 0 && got < sizeof b) {
            ssize_t n = read(fd, b + got, sizeof b - got);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                break;
            got += (size_t)n;
        }
        if (fd >= 0)
            close(fd);
    }
    if (got < sizeof b) {
        out[0] = 0;
        return -1;
    }
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < sizeof b; i++) {
        out[2 * i] = hex[b[i] >> 4];
        out[2 * i + 1] = hex[b[i] & 15];
    }
    out[32] = 0;
    return 0;
}

int tool_is_random_id(const char *s)
{
    size_t i = 0;
    for (; s && s[i]; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    return i == 32;
}
