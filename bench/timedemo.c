/*
 * timedemo.c - a single-threaded game loop of sub-millisecond frames, for the gate's proof on
 * a workload like an old software-rendered game's timedemo (`make proof`, bench/gate_proof.sh).
 *
 *   timedemo [--frames N] [--slow ZONE=PCT] [--capture PATH] [--quiet]
 *
 * Each frame ticks the game, ray-casts a 400x300 view of a grid level column by column, fills
 * the floor and ceiling, draws the visible things as scaled sprites against the walls' depth,
 * converts the 8-bit frame through a palette into a 32-bit screen and mixes a few sound
 * channels, all on the main thread, uncapped, as fast as the machine allows (about 0.3 ms a
 * frame on a 2020s x86 core). The camera follows a fixed path through the level, so every run
 * draws the same frames and the frames differ among themselves as a game's do (a wall close to
 * the camera costs more columns of texture, an open view more floor).
 *
 * --slow ZONE=PCT makes one zone do PCT percent more of its own work (ZONE: walls, planes,
 * sprites, blit, tick, mix, or a zone name such as Render::walls): it repeats that share of its
 * items (columns, rows, sprites, things, samples), spread evenly over them, with the same code, so
 * the extra time is CPU work whatever the machine's load, and it lands in that zone's self time.
 *
 * Profiling starts with mprof_startup and the environment (MPROF_CAPTURE, MPROF_LISTEN: what
 * `mprof ci` sets) or --capture. Exit status: 0 ok, 2 usage error, 3 the profiler did not start.
 */
#include <mprof/mprof.h>

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define W 400
#define H 300
#define MAP 64
#define TEX 64
#define THINGS 96
#define CHANNELS 8
#define MIX_SAMPLES 32 /* 44.1 kHz at about 1,400 frames a second */

enum { Z_TICK, Z_WALLS, Z_PLANES, Z_SPRITES, Z_BLIT, Z_MIX, Z_COUNT };
static const struct {
    const char *short_name, *zone;
} zone_names[Z_COUNT] = {
    {"tick", "Game::tick"},         {"walls", "Render::walls"}, {"planes", "Render::planes"},
    {"sprites", "Render::sprites"}, {"blit", "Render::blit"},   {"mix", "Audio::mix"},
};

static uint8_t level[MAP][MAP];   /* 0 empty, else a wall texture 1..4 */
static uint8_t tex[5][TEX * TEX]; /* wall and flat textures */
static uint8_t frame[H][W];       /* the 8-bit view */
static uint32_t screen[H][W];     /* the palette-converted screen */
static uint32_t palette[256];
static float depth[W]; /* each column's wall distance, for the sprites */
static int16_t wall_top[W], wall_bottom[W];
static int16_t sound[CHANNELS][4096];
static int32_t mixbuf[MIX_SAMPLES * 2];

typedef struct thing {
    float x, y, dx, dy;
    uint8_t kind;
} thing;
static thing things[THINGS];

static uint32_t rng = 0x9e3779b9u;
static uint32_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return rng;
}

/* The slowdown of each zone, as extra items per hundred. */
static int slow_pct[Z_COUNT];

/* How many times item k of zone z is done, --slow included: once, plus PCT / 100 repeats on
 * average, spread evenly over the items (61 k mod 100 walks all residues), so that the extra
 * work is PCT percent of the zone's work whichever items cost more. */
static int times(int z, int k)
{
    int pct = slow_pct[z];
    return 1 + pct / 100 + ((k * 61) % 100 < pct % 100);
}

static void build_level(void)
{
    for (int y = 0; y < MAP; y++)
        for (int x = 0; x < MAP; x++) {
            int border = x == 0 || y == 0 || x == MAP - 1 || y == MAP - 1;
            int pillar = (x % 8 == 4 && y % 8 == 4) || (x % 16 == 0 && y % 5 == 2);
            level[y][x] = border ? 1 : pillar ? (uint8_t)(2 + (x + y) % 3) : 0;
        }
    for (int t = 0; t < 5; t++)
        for (int i = 0; i < TEX * TEX; i++) {
            int u = i % TEX, v = i / TEX;
            tex[t][i] = (uint8_t)(t * 48 + ((u ^ v) & 31) + ((u * v + t * 7) & 15));
        }
    for (int i = 0; i < 256; i++)
        palette[i] = (uint32_t)(i * 0x010101u) ^ (uint32_t)(i << 17);
    for (int c = 0; c < CHANNELS; c++)
        for (int i = 0; i < 4096; i++)
            sound[c][i] = (int16_t)(8000.0 * sin((double)i * (0.01 + 0.003 * c)));
    for (int i = 0; i < THINGS; i++) {
        things[i].x = 2.0f + (float)(next_rand() % 6000) / 100.0f;
        things[i].y = 2.0f + (float)(next_rand() % 6000) / 100.0f;
        things[i].dx = ((float)(next_rand() % 200) - 100.0f) / 4000.0f;
        things[i].dy = ((float)(next_rand() % 200) - 100.0f) / 4000.0f;
        things[i].kind = (uint8_t)(next_rand() % 4);
    }
}

/* The game: every thing moves and bounces off walls. */
static void tick(void)
{
    MPROF_ZONE_C("Game::tick", MPROF_COLOR_AI);
    for (int k = 0; k < THINGS; k++) {
        thing *t = &things[k];
        /* Repeats redo the collision checks; only the last pass moves the thing. */
        for (int r = times(Z_TICK, k); r > 0; r--) {
            float nx = t->x + t->dx, ny = t->y + t->dy;
            if (level[(int)t->y][(int)nx])
                t->dx = -t->dx;
            else if (r == 1)
                t->x = nx;
            if (level[(int)ny][(int)t->x])
                t->dy = -t->dy;
            else if (r == 1)
                t->y = ny;
        }
    }
}

/* One column of the view: a DDA walk through the grid, then the textured wall slice. */
static void wall_column(int col, float px, float py, float dirx, float diry, float planex,
                        float planey)
{
    float cam = 2.0f * (float)col / (float)W - 1.0f;
    float rx = dirx + planex * cam, ry = diry + planey * cam;
    int mx = (int)px, my = (int)py;
    float ddx = rx == 0 ? 1e30f : fabsf(1.0f / rx), ddy = ry == 0 ? 1e30f : fabsf(1.0f / ry);
    int sx = rx < 0 ? -1 : 1, sy = ry < 0 ? -1 : 1;
    float distx = rx < 0 ? (px - (float)mx) * ddx : ((float)mx + 1.0f - px) * ddx;
    float disty = ry < 0 ? (py - (float)my) * ddy : ((float)my + 1.0f - py) * ddy;
    int side = 0;
    for (int steps = 0; steps < 128; steps++) {
        if (distx < disty) {
            distx += ddx;
            mx += sx;
            side = 0;
        } else {
            disty += ddy;
            my += sy;
            side = 1;
        }
        if (mx < 0 || my < 0 || mx >= MAP || my >= MAP || level[my][mx])
            break;
    }
    float dist = side == 0 ? distx - ddx : disty - ddy;
    if (dist < 0.05f)
        dist = 0.05f;
    depth[col] = dist;
    int h = (int)((float)H / dist);
    int top = H / 2 - h / 2, bottom = H / 2 + h / 2;
    wall_top[col] = (int16_t)(top < 0 ? 0 : top);
    wall_bottom[col] = (int16_t)(bottom >= H ? H - 1 : bottom);
    float hit = side == 0 ? py + dist * ry : px + dist * rx;
    int u = (int)((hit - floorf(hit)) * TEX) & (TEX - 1);
    const uint8_t *t = tex[mx >= 0 && my >= 0 && mx < MAP && my < MAP ? level[my][mx] : 1];
    int shade = side ? 8 : 0;
    for (int y = wall_top[col]; y <= wall_bottom[col]; y++) {
        int v = (int)((int64_t)(y - top) * TEX / (h > 0 ? h : 1)) & (TEX - 1);
        frame[y][col] = (uint8_t)(t[v * TEX + u] + shade);
    }
}

static void walls(float px, float py, float angle)
{
    MPROF_ZONE_C("Render::walls", MPROF_COLOR_RENDERER);
    float dirx = cosf(angle), diry = sinf(angle);
    float planex = -diry * 0.66f, planey = dirx * 0.66f;
    for (int k = 0; k < W; k++)
        for (int r = times(Z_WALLS, k); r > 0; r--)
            wall_column(k, px, py, dirx, diry, planex, planey);
}

/* Floor and ceiling: a perspective texture lookup for every pixel outside the walls. */
static void planes(float px, float py, float angle)
{
    MPROF_ZONE_C("Render::planes", MPROF_COLOR_RENDERER);
    float dirx = cosf(angle), diry = sinf(angle);
    float planex = -diry * 0.66f, planey = dirx * 0.66f;
    for (int k = 0; k < H / 2 - 1; k++)
        for (int r = times(Z_PLANES, k); r > 0; r--) {
            int y = H / 2 + 1 + k;
            float rowdist = (float)(H / 2) / (float)(y - H / 2);
            float fx = px + rowdist * (dirx - planex), fy = py + rowdist * (diry - planey);
            float stepx = rowdist * 2.0f * planex / W, stepy = rowdist * 2.0f * planey / W;
            int mirror = H - 1 - y;
            for (int x = 0; x < W; x++, fx += stepx, fy += stepy) {
                int tu = (int)(fx * TEX) & (TEX - 1), tv = (int)(fy * TEX) & (TEX - 1);
                if (y > wall_bottom[x])
                    frame[y][x] = tex[3][tv * TEX + tu];
                if (mirror < wall_top[x])
                    frame[mirror][x] = tex[4][tv * TEX + tu];
            }
        }
}

/* Things in view, nearest last, each a scaled sprite clipped by the walls' depth. */
static void sprites(float px, float py, float angle)
{
    MPROF_ZONE_C("Render::sprites", MPROF_COLOR_RENDERER);
    float dirx = cosf(angle), diry = sinf(angle);
    float planex = -diry * 0.66f, planey = dirx * 0.66f;
    float inv = 1.0f / (planex * diry - dirx * planey);
    for (int k = 0; k < THINGS; k++)
        for (int r = times(Z_SPRITES, k); r > 0; r--) {
            const thing *t = &things[k];
            float sx = t->x - px, sy = t->y - py;
            float tx = inv * (diry * sx - dirx * sy), ty = inv * (-planey * sx + planex * sy);
            if (ty < 0.2f)
                continue;
            int cx = (int)((W / 2) * (1.0f + tx / ty));
            int size = (int)((float)H / ty);
            if (size > H)
                size = H;
            int x0 = cx - size / 2, y0 = H / 2 - size / 2;
            for (int x = x0 < 0 ? 0 : x0; x < x0 + size && x < W; x++) {
                if (ty >= depth[x])
                    continue;
                int u = (x - x0) * TEX / size;
                for (int y = y0 < 0 ? 0 : y0; y < y0 + size && y < H; y++) {
                    uint8_t c = tex[t->kind][((y - y0) * TEX / size) * TEX + u];
                    if (c & 1)
                        frame[y][x] = c;
                }
            }
        }
}

static void blit(void)
{
    MPROF_ZONE_C("Render::blit", MPROF_COLOR_RENDERER);
    for (int y = 0; y < H; y++)
        for (int r = times(Z_BLIT, y); r > 0; r--)
            for (int x = 0; x < W; x++)
                screen[y][x] = palette[frame[y][x]];
}

static void mix(long f)
{
    MPROF_ZONE_C("Audio::mix", MPROF_COLOR_AUDIO);
    for (int s = 0; s < MIX_SAMPLES; s++)
        for (int rep = times(Z_MIX, s); rep > 0; rep--) {
            int32_t l = 0, r = 0;
            for (int c = 0; c < CHANNELS; c++) {
                int16_t v = sound[c][(f * MIX_SAMPLES + s + c * 97) & 4095];
                l += v * (c + 1);
                r += v * (CHANNELS - c);
            }
            mixbuf[s * 2] = l;
            mixbuf[s * 2 + 1] = r;
        }
}

static int parse_slow(const char *v)
{
    const char *eq = strchr(v, '=');
    if (!eq)
        return -1;
    size_t len = (size_t)(eq - v);
    char *end;
    errno = 0;
    long pct = strtol(eq + 1, &end, 10);
    if (errno || end == eq + 1 || *end || pct < 1 || pct > 10000)
        return -1;
    for (int z = 0; z < Z_COUNT; z++)
        if ((strlen(zone_names[z].short_name) == len &&
             strncasecmp(zone_names[z].short_name, v, len) == 0) ||
            (strlen(zone_names[z].zone) == len && strncmp(zone_names[z].zone, v, len) == 0)) {
            slow_pct[z] = (int)pct;
            return 0;
        }
    return -1;
}

static void usage(FILE *out)
{
    fputs("usage: timedemo [--frames N] [--slow ZONE=PCT] [--capture PATH] [--quiet]\n"
          "\n"
          "A single-threaded game loop of sub-millisecond frames, instrumented with mprof.\n"
          "\n"
          "  --frames N        frames to run (default 4800)\n"
          "  --slow ZONE=PCT   make one zone do PCT percent more of its work; ZONE: walls,\n"
          "                    planes, sprites, blit, tick, mix, or its zone name\n"
          "                    (Render::walls, ...)\n"
          "  --capture PATH    write a capture to PATH (else MPROF_CAPTURE, MPROF_LISTEN)\n"
          "  --quiet           print nothing on success\n"
          "  -h, --help        this help\n"
          "\n"
          "Exit status: 0 ok, 2 usage error, 3 the profiler did not start.\n",
          out);
}

int main(int argc, char **argv)
{
    long frames = 4800;
    const char *capture = NULL;
    int quiet = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--quiet")) {
            quiet = 1;
        } else if (!strcmp(a, "--frames") && v) {
            errno = 0;
            frames = strtol(v, &end, 10);
            if (errno || *end || end == v || frames < 1 || frames > 100000000) {
                fprintf(stderr, "timedemo: --frames '%s': expected 1 to 100000000\n", v);
                return 2;
            }
            i++;
        } else if (!strcmp(a, "--slow") && v) {
            if (parse_slow(v)) {
                fprintf(stderr,
                        "timedemo: --slow '%s': expected ZONE=PCT with ZONE one of walls, "
                        "planes, sprites, blit, tick, mix (or its zone name) and PCT "
                        "from 1 to 10000\n",
                        v);
                return 2;
            }
            i++;
        } else if (!strcmp(a, "--capture") && v) {
            capture = v;
            i++;
        } else {
            fprintf(stderr, "timedemo: %s: %s (see --help)\n", a,
                    v || strncmp(a, "--", 2) ? "unknown option" : "needs a value");
            return 2;
        }
    }
    mprof_config cfg = {0};
    cfg.app_name = "timedemo";
    cfg.capture_path = capture;
    mprof_result r = mprof_startup(&cfg);
    if (r != MPROF_OK) {
        fprintf(stderr, "timedemo: cannot start the profiler: %s\n", mprof_result_str(r));
        return 3;
    }
    MPROF_THREAD_NAME("Main");
    build_level();
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    MPROF_FRAME_MARK();
    for (long f = 0; f < frames; f++) {
        /* The camera's path: a slow loop around the level's middle, turning as it goes. */
        float a = (float)f * 0.0021f;
        float px = 32.0f + 20.0f * sinf(a * 1.3f) + 0.5f, py = 32.0f + 20.0f * cosf(a) + 0.5f;
        if (level[(int)py][(int)px])
            px += 0.5f;
        float angle = a * 2.7f + 0.6f * sinf(a * 7.0f);
        tick();
        walls(px, py, angle);
        planes(px, py, angle);
        sprites(px, py, angle);
        blit();
        mix(f);
        MPROF_FRAME_MARK();
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    mprof_shutdown();
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    uint32_t sum = 0;
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            sum = sum * 31u + screen[y][x];
    if (!quiet)
        printf("timedemo: %ld frames in %.3f s, %.0f fps, %.3f ms a frame (screen %08x)\n", frames,
               secs, (double)frames / secs, 1000.0 * secs / (double)frames,
               (unsigned)(sum ^ (uint32_t)mixbuf[0]));
    if (fflush(stdout) != 0 || ferror(stdout))
        return 3;
    return 0;
}
