/*
 * synth_capture.c - captures whose every time stamp is chosen, for the browser tests of the
 * served page (tests/view_compare_browser.js), whose checks must not depend on how busy the
 * machine is (a real program's frame times do).
 *
 * usage: synth_capture OUT.mprof MODE
 *   small   400 frames of 0.25 to 0.35 ms, the first one 50 ms long and one hitch of 6 ms at
 *           frame 200 (the frame graph's scale);
 *   budget  40 frames of 15 to 18 ms (near the 16.7 ms budget);
 *   a, b    30 frames of Frame > Update > Physics::step (0.3 ms in a, 1.2 ms in b, where it
 *           also calls Physics::solve), AI::think and Render; a frame set "Physics" around each
 *           Physics::step (the comparison).
 * Exit status: 0 written, 2 usage, 3 cannot write.
 */
#include "test_util.h"

#include <stdio.h>
#include <string.h>

#define US 1000LL

enum { L_FRAME = 1, L_UPDATE, L_PHYS, L_AI, L_RENDER, L_SOLVE, L_DRAW };

static void locs(tu_cap *c)
{
    tu_cap_loc(c, L_FRAME, "Frame", "frame", "/src/main.c", 10);
    tu_cap_loc(c, L_UPDATE, "Update", "update", "/src/main.c", 20);
    tu_cap_loc(c, L_PHYS, "Physics::step", "physics_step", "/src/physics.c", 30);
    tu_cap_loc(c, L_AI, "AI::think", "ai_think", "/src/ai.c", 40);
    tu_cap_loc(c, L_RENDER, "Render", "render", "/src/render.c", 50);
    tu_cap_loc(c, L_SOLVE, "Physics::solve", "physics_solve", "/src/physics.c", 60);
    tu_cap_loc(c, L_DRAW, "DrawCall", "draw", "/src/render.c", 70);
}

/* Frames of the given durations (us), each a Frame zone with a few draw calls. */
static void frames_of(tu_cap *c, const long long *dur_us, int n)
{
    long long t = 100 * US;
    tu_cap_mark(c, t, 0);
    for (int f = 0; f < n; f++) {
        long long d = dur_us[f] * US;
        tu_cap_begin(c, t + 10 * US / 10, L_FRAME);
        for (int k = 0; k < 4; k++)
            tu_cap_zone(c, t + 5 * US + k * d / 5, t + 5 * US + k * d / 5 + d / 10, L_DRAW);
        tu_cap_end(c, t + d - 2 * US);
        t += d;
        tu_cap_mark(c, t, 0);
    }
}

static void compare_side(tu_cap *c, int slow)
{
    tu_cap_string(c, 1, "Physics");
    long long t = 100 * US, phys = slow ? 1200 * US : 300 * US;
    tu_cap_mark(c, t, 0);
    for (int f = 0; f < 30; f++) {
        long long s = t + 10 * US;
        tu_cap_begin(c, s, L_FRAME);
        tu_cap_begin(c, s + 5 * US, L_UPDATE);
        tu_cap_frame_begin(c, s + 10 * US, 1);
        tu_cap_begin(c, s + 10 * US, L_PHYS);
        if (slow)
            tu_cap_zone(c, s + 20 * US, s + 20 * US + 800 * US, L_SOLVE);
        tu_cap_end(c, s + 10 * US + phys);
        tu_cap_frame_end(c, s + 10 * US + phys, 1);
        long long a = s + 20 * US + phys;
        tu_cap_zone(c, a, a + 200 * US, L_AI);
        tu_cap_end(c, a + 210 * US);
        tu_cap_zone(c, a + 220 * US, a + 320 * US, L_RENDER);
        tu_cap_end(c, a + 330 * US);
        t = a + 400 * US;
        tu_cap_mark(c, t, 0);
    }
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: synth_capture OUT.mprof small|budget|a|b\n");
        return 2;
    }
    tu_cap c = {0};
    tu_cap_thread(&c, 1);
    locs(&c);
    static long long d[400];
    if (strcmp(argv[2], "small") == 0) {
        for (int f = 0; f < 400; f++)
            d[f] = 250 + (f * 37) % 101;
        d[0] = 50000;
        d[200] = 6000;
        frames_of(&c, d, 400);
    } else if (strcmp(argv[2], "budget") == 0) {
        for (int f = 0; f < 40; f++)
            d[f] = 15000 + (f * 523) % 3001;
        frames_of(&c, d, 40);
    } else if (strcmp(argv[2], "a") == 0 || strcmp(argv[2], "b") == 0) {
        compare_side(&c, argv[2][0] == 'b');
    } else {
        fprintf(stderr, "synth_capture: unknown mode '%s'\n", argv[2]);
        return 2;
    }
    if (tu_cap_write(&c, argv[1]) != 0) {
        fprintf(stderr, "synth_capture: cannot write %s\n", argv[1]);
        return 3;
    }
    return 0;
}
