/*
 * compare.c - the pairing of two served captures (compare.h): the zones of each side with calls,
 * as keys (name, function, file, line from each index's metadata), paired one to one by
 * mprof__zone_key_pair, the same function `mprof diff` and the gate's attribution use; the frame
 * sets paired by name (the main sets always with each other).
 */
#define _POSIX_C_SOURCE 200809L /* open_memstream */
#include "view/compare.h"

#include "analysis/zone_key.h"
#include "util/json_out.h"
#include "util/tool.h"
#include "view/index_file.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

typedef struct side {
    cJSON *meta;
    mprof_zone_key *keys;
    uint32_t *slots;
    size_t n;
    const cJSON *sets;
} side;

static const char *str_at(const cJSON *a, int i)
{
    const cJSON *s = cJSON_GetArrayItem(a, i);
    return cJSON_IsString(s) ? s->valuestring : "";
}

/* The zones of one side with calls: slots from loc_stats, keys from srclocs. */
static int side_load(side *s, const mprof_vindex *x)
{
    memset(s, 0, sizeof *s);
    s->meta = cJSON_ParseWithLength(x->meta, x->meta_len);
    if (!s->meta)
        return -1;
    const cJSON *ls = cJSON_GetObjectItemCaseSensitive(s->meta, "loc_stats");
    const cJSON *sl = cJSON_GetObjectItemCaseSensitive(s->meta, "srclocs");
    s->sets = cJSON_GetObjectItemCaseSensitive(s->meta, "frame_sets");
    int n = cJSON_GetArraySize(ls);
    s->keys = calloc((size_t)n + 1, sizeof *s->keys);
    s->slots = calloc((size_t)n + 1, sizeof *s->slots);
    if (!s->keys || !s->slots)
        return -1;
    const cJSON *row;
    cJSON_ArrayForEach(row, ls) {
        const cJSON *slot = cJSON_GetArrayItem(row, 0), *kind = cJSON_GetArrayItem(row, 6);
        /* Lock and async spans are no zones: mprof diff pairs zones only. */
        if (!cJSON_IsNumber(slot) || !cJSON_IsString(kind) || strcmp(kind->valuestring, "lock") == 0 ||
            strcmp(kind->valuestring, "async") == 0)
            continue;
        const cJSON *loc = cJSON_GetArrayItem(sl, slot->valueint);
        if (!cJSON_IsArray(loc))
            continue;
        const cJSON *line = cJSON_GetArrayItem(loc, 3);
        s->keys[s->n] = (mprof_zone_key){str_at(loc, 0), str_at(loc, 1), str_at(loc, 2),
                                         cJSON_IsNumber(line) ? (uint32_t)line->valuedouble : 0};
        s->slots[s->n++] = (uint32_t)slot->valuedouble;
    }
    return 0;
}

static void side_free(side *s)
{
    cJSON_Delete(s->meta);
    free(s->keys);
    free(s->slots);
}

char *mprof__vcompare_pairs(const mprof_vindex *a, const mprof_vindex *b, char *err, size_t errlen)
{
    side sa, sb;
    char *out = NULL;
    size_t len = 0;
    ptrdiff_t *pair = NULL;
    char *matched = NULL;
    int ok = side_load(&sa, a) == 0;
    ok = side_load(&sb, b) == 0 && ok;
    if (ok) {
        pair = malloc((sa.n + 1) * sizeof *pair);
        matched = calloc(sb.n + 1, 1);
        ok = pair && matched && mprof__zone_key_pair(sa.keys, sa.n, sb.keys, sb.n, pair) == 0;
    }
    FILE *m = ok ? open_memstream(&out, &len) : NULL;
    if (m) {
        mprof_json j;
        mprof_json_init(&j, m, 0);
        mprof_json_obj_begin(&j, NULL);
        mprof_json_str(&j, "rule", "name and function; file (trailing components) and line break ties");
        mprof_json_arr_begin(&j, "pairs"); /* [slot in A, slot in B] */
        for (size_t i = 0; i < sa.n; i++)
            if (pair[i] >= 0) {
                matched[pair[i]] = 1;
                mprof_json_arr_begin(&j, NULL);
                mprof_json_u64(&j, NULL, sa.slots[i]);
                mprof_json_u64(&j, NULL, sb.slots[pair[i]]);
                mprof_json_arr_end(&j);
            }
        mprof_json_arr_end(&j);
        mprof_json_arr_begin(&j, "only_a");
        for (size_t i = 0; i < sa.n; i++)
            if (pair[i] < 0)
                mprof_json_u64(&j, NULL, sa.slots[i]);
        mprof_json_arr_end(&j);
        mprof_json_arr_begin(&j, "only_b");
        for (size_t i = 0; i < sb.n; i++)
            if (!matched[i])
                mprof_json_u64(&j, NULL, sb.slots[i]);
        mprof_json_arr_end(&j);
        /* Frame sets: the main sets with each other, the others by name. */
        mprof_json_arr_begin(&j, "sets");
        const cJSON *fa, *fb;
        cJSON_ArrayForEach(fa, sa.sets) {
            cJSON_ArrayForEach(fb, sb.sets) {
                int main_a = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(fa, "main"));
                int main_b = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(fb, "main"));
                const cJSON *na = cJSON_GetObjectItemCaseSensitive(fa, "name");
                const cJSON *nb = cJSON_GetObjectItemCaseSensitive(fb, "name");
                int same = (main_a && main_b) ||
                           (!main_a && !main_b && cJSON_IsString(na) && cJSON_IsString(nb) && strcmp(na->valuestring, nb->valuestring) == 0);
                if (!same)
                    continue;
                const cJSON *ka = cJSON_GetObjectItemCaseSensitive(fa, "set");
                const cJSON *kb = cJSON_GetObjectItemCaseSensitive(fb, "set");
                if (!cJSON_IsNumber(ka) || !cJSON_IsNumber(kb))
                    continue;
                mprof_json_arr_begin(&j, NULL);
                mprof_json_u64(&j, NULL, (uint64_t)ka->valuedouble);
                mprof_json_u64(&j, NULL, (uint64_t)kb->valuedouble);
                mprof_json_arr_end(&j);
                break;
            }
        }
        mprof_json_arr_end(&j);
        mprof_json_obj_end(&j);
        if (fclose(m) != 0) {
            free(out);
            out = NULL;
        }
    }
    if (!out)
        tool_seterr(err, errlen, "cannot pair the two captures' zones (out of memory or a damaged index)");
    free(pair);
    free(matched);
    side_free(&sa);
    side_free(&sb);
    return out;
}
