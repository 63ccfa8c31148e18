/*
 * streaming.c - asset streaming: the game thread asks for assets, a loader thread loads them,
 * and the game thread takes them in when they are ready, frames later.
 *
 * Each request is an async span (MPROF_ASYNC_BEGIN on the game thread, MPROF_ASYNC_END on the
 * loader thread when the asset is decoded) with the request's number as its id: requests
 * overlap, each one begins on one thread and ends on another, which a zone cannot show. The
 * upload that follows on the game thread is a second track ("Asset uploads"), begun by the
 * loader and ended by the game thread. "Loading" is real CPU work on a buffer (a checksum over
 * a few hundred kilobytes, as decompression would touch it), so a span's length follows the
 * asset's size and the loader's load.
 */
#include "engine.h"

#include "mprof/mprof.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define QUEUE 16            /* requests in flight at most */
#define REQUEST_EVERY 4     /* frames between requests */
#define CHUNK_BYTES 65536

typedef struct request {
    uint64_t id;
    uint32_t kind;  /* index into kinds */
    uint32_t bytes;
    uint64_t checksum;
} request;

static const struct {
    const char *name;
    uint32_t min_kb, max_kb;
} kinds[] = {{"texture", 256, 1024}, {"mesh", 64, 512}, {"sound", 32, 256}};

static struct {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    request todo[QUEUE], done[QUEUE];
    uint32_t n_todo, n_done;
    int running, stop;
    uint64_t next_id, loaded, uploaded;
    uint32_t seed;
    unsigned char *scratch;
} S = {.lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER};

static uint32_t next_rand(void)
{
    S.seed = S.seed * 1664525u + 1013904223u;
    return S.seed >> 8;
}

/* The loader's work: touch every byte of the asset, as decoding it would. */
static uint64_t load(const request *r)
{
    uint64_t h = 0xcbf29ce484222325ull ^ r->id;
    for (uint32_t off = 0; off < r->bytes; off += CHUNK_BYTES) {
        uint32_t n = r->bytes - off < CHUNK_BYTES ? r->bytes - off : CHUNK_BYTES;
        for (uint32_t i = 0; i < n; i++) {
            S.scratch[i] = (unsigned char)(h >> (i & 31));
            h = (h ^ S.scratch[i]) * 0x100000001b3ull;
        }
    }
    return h;
}

static void *loader_main(void *arg)
{
    (void)arg;
    MPROF_THREAD_NAME("Asset loader");
    pthread_mutex_lock(&S.lock);
    for (;;) {
        while (!S.n_todo && !S.stop)
            pthread_cond_wait(&S.wake, &S.lock);
        if (!S.n_todo)
            break;
        request r = S.todo[0];
        memmove(S.todo, S.todo + 1, --S.n_todo * sizeof S.todo[0]);
        pthread_mutex_unlock(&S.lock);
        {
            MPROF_ZONE_C("Streaming::load", 0);
            r.checksum = load(&r);
        }
        /* Loaded: the request's span ends here, on the loader thread, and its upload begins. */
        MPROF_ASYNC_END("Asset loads", r.id);
        MPROF_ASYNC_BEGIN("Asset uploads", r.id, "upload");
        pthread_mutex_lock(&S.lock);
        S.done[S.n_done++] = r;
        S.loaded++;
    }
    pthread_mutex_unlock(&S.lock);
    return NULL;
}

int streaming_init(const engine_options *opt)
{
    S.seed = (uint32_t)opt->seed ^ 0x5eed5u;
    S.scratch = malloc(CHUNK_BYTES);
    if (!S.scratch)
        return -1;
    S.stop = 0;
    if (pthread_create(&S.thread, NULL, loader_main, NULL) != 0) {
        free(S.scratch);
        S.scratch = NULL;
        return -1;
    }
    S.running = 1;
    return 0;
}

void streaming_frame(uint64_t frame)
{
    if (!S.running)
        return;
    MPROF_ZONE_C("Streaming::frame", 0);
    pthread_mutex_lock(&S.lock);
    /* Take in what was loaded: the upload ends on the game thread. */
    for (uint32_t i = 0; i < S.n_done; i++) {
        MPROF_ASYNC_END("Asset uploads", S.done[i].id);
        S.uploaded++;
    }
    S.n_done = 0;
    if (frame % REQUEST_EVERY == 0 && S.n_todo + S.n_done < QUEUE) {
        uint32_t k = next_rand() % (sizeof kinds / sizeof kinds[0]);
        uint32_t kb = kinds[k].min_kb + next_rand() % (kinds[k].max_kb - kinds[k].min_kb + 1);
        request r = {.id = ++S.next_id, .kind = k, .bytes = kb * 1024};
        S.todo[S.n_todo++] = r;
        /* A literal name per kind: only its address travels. */
        switch (k) {
        case 0:
            MPROF_ASYNC_BEGIN("Asset loads", r.id, "texture");
            break;
        case 1:
            MPROF_ASYNC_BEGIN("Asset loads", r.id, "mesh");
            break;
        default:
            MPROF_ASYNC_BEGIN("Asset loads", r.id, "sound");
            break;
        }
        pthread_cond_signal(&S.wake);
    }
    MPROF_PLOT_INT("assets_in_flight", S.n_todo);
    pthread_mutex_unlock(&S.lock);
}

void streaming_shutdown(void)
{
    if (!S.running)
        return;
    pthread_mutex_lock(&S.lock);
    S.stop = 1;
    pthread_cond_signal(&S.wake);
    pthread_mutex_unlock(&S.lock);
    pthread_join(S.thread, NULL); /* the loader finishes the requests it has */
    for (uint32_t i = 0; i < S.n_done; i++)
        MPROF_ASYNC_END("Asset uploads", S.done[i].id);
    S.n_done = 0;
    S.running = 0;
    free(S.scratch);
    S.scratch = NULL;
}
