/*
 * processes.c - the processes of a capture with several, as the viewers show them
 * (processes.h): which process a track is of, the order of the tracks, each process's threads.
 */
#include "view/processes.h"

int mprof__vproc_several(const mprof_reader *r)
{
    return mprof_reader_process_count(r) > 1;
}

uint32_t mprof__vproc_of_track(const mprof_reader *r, const mprof_walker *w, uint32_t i)
{
    const mprof_tl_track *t = mprof__walker_track(w, i);
    if (!t || t->kind != MPROF_TRACK_THREAD)
        return MPROF_VPROC_NONE;
    const mprof_thread_def *d = mprof_reader_thread(r, t->ref);
    return d ? d->process : 0;
}

int mprof__vproc_track_after(const mprof_reader *r, const mprof_walker *w, uint32_t a, uint32_t b)
{
    const mprof_tl_track *x = mprof__walker_track(w, a);
    const mprof_tl_track *y = mprof__walker_track(w, b);
    if (x->kind != y->kind)
        return x->kind > y->kind;
    if (x->kind != MPROF_TRACK_THREAD)
        return 0;
    uint32_t px = mprof__vproc_of_track(r, w, a), py = mprof__vproc_of_track(r, w, b);
    if (px != py)
        return px > py;
    return x->ref > y->ref;
}

uint32_t mprof__vproc_threads(const mprof_reader *r, const mprof_walker *w, uint32_t p)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < mprof__walker_track_count(w); i++) {
        const mprof_tl_track *t = mprof__walker_track(w, i);
        if (t->kind == MPROF_TRACK_THREAD && t->ref && mprof__vproc_of_track(r, w, i) == p)
            n++;
    }
    return n;
}

void mprof__vproc_json(const mprof_reader *r, const mprof_walker *w, mprof_json *j)
{
    mprof_json_arr_begin(j, "processes");
    for (uint32_t i = 0; i < mprof_reader_process_count(r); i++) {
        const mprof_process_def *d = mprof_reader_process(r, i);
        if (!d)
            break;
        mprof_json_obj_begin(j, NULL);
        mprof_json_u64(j, "index", i);
        mprof_json_u64(j, "pid", d->pid);
        mprof_json_str(j, "name", d->name);
        mprof_json_u64(j, "threads", mprof__vproc_threads(r, w, i));
        if (d->ended_by)
            mprof_json_str(j, "ended_by", d->ended_by);
        mprof_json_obj_end(j);
    }
    mprof_json_arr_end(j);
}
