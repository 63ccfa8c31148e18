/*
 * fuzz_merge.c - libFuzzer target for the merger (src/format/merge.c): any bytes the reader takes
 * as a capture, merged with itself (the second copy placed by --offset), must give a capture
 * that reads back whole, with the processes the merger says it wrote; bytes the reader refuses
 * must fail the merge with a message and leave no output. A difference aborts, which the fuzzer
 * reports as a crash. replay_main.c replays the reader's corpus in the normal test run.
 */
#include "format/format.h"
#include "format/merge.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *dir = getenv("TMPDIR");
    char in[512], out[512];
    snprintf(in, sizeof in, "%s/mprof-fuzz-merge-%ld-in.mprof", dir && *dir ? dir : "/tmp",
             (long)getpid());
    snprintf(out, sizeof out, "%s/mprof-fuzz-merge-%ld-out.mprof", dir && *dir ? dir : "/tmp",
             (long)getpid());
    FILE *f = fopen(in, "wb");
    if (!f)
        return 0;
    int wrote = fwrite(data, 1, size, f) == size;
    if (fclose(f) != 0 || !wrote) {
        unlink(in);
        return 0;
    }
    unlink(out);
    mprof_merge_input inputs[2] = {{.path = in}, {.path = in, .has_offset = 1, .offset_ns = 1000}};
    mprof_merge_result res;
    char err[512];
    struct stat st;
    if (mprof_merge(inputs, 2, out, &res, err, sizeof err) != 0) {
        if (!err[0] || stat(out, &st) == 0) {
            fprintf(stderr, "fuzz_merge: a failed merge without a message, or with an output\n");
            abort();
        }
    } else {
        mprof_reader *r = mprof_reader_open(out, err, sizeof err);
        if (!r) {
            fprintf(stderr, "fuzz_merge: the merged capture does not open: %s\n", err);
            abort();
        }
        mprof_event ev;
        int rc;
        while ((rc = mprof_reader_next(r, &ev)) == 1)
            ;
        mprof_reader_stats rs;
        mprof_reader_get_stats(r, &rs);
        /* Whole: its END's event count (what the merger wrote) is what the reader read. */
        if (rc < 0 || !mprof_reader_stats_whole(&rs) ||
            mprof_reader_process_count(r) != res.processes) {
            fprintf(stderr, "fuzz_merge: the merged capture does not read back whole (%s; %u "
                            "processes of %u)\n", rc < 0 ? mprof_reader_error(r) : "no error",
                    mprof_reader_process_count(r), res.processes);
            abort();
        }
        mprof_reader_close(r);
    }
    unlink(in);
    unlink(out);
    return 0;
}
