/*
 * audio.c - a software mixer: short synthesized voices mixed into a stereo buffer each frame.
 *
 * Physics impacts and AI events start voices (a decaying sine with a little noise, panned by
 * a per-voice random position); the mixer renders 1/60 s of 48 kHz stereo float samples per
 * frame, applies a one-pole low-pass and a soft clip on the master bus, and keeps the peak
 * level. There is no output device: the point is the mixing work and the voices plot, and a
 * headless engine must run anywhere.
 */
#include "engine.h"

#include "mprof/mprof.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define RATE 48000
#define FRAME_SAMPLES (RATE / 60)
#define MAX_VOICES 48

typedef struct voice {
    int active;
    float phase, freq, amp, decay, pan, noise;
    uint32_t noise_state;
} voice;

static struct {
    voice voices[MAX_VOICES];
    float mix[FRAME_SAMPLES * 2];
    float lp_l, lp_r;
    float peak;
    uint32_t active;
    eng_rng rng;
    uint64_t hash;
} au;

int audio_init(const engine_options *opt)
{
    memset(&au, 0, sizeof au);
    au.rng = rng_make(opt->seed, 3);
    au.hash = 1469598103934665603ull;
    return 0;
}

void audio_shutdown(void)
{
    log_msg(ENG_LOG_DEBUG, "audio: last peak level %.3f", (double)au.peak);
}

static void start_voice(float freq, float amp, float decay)
{
    MPROF_ZONE_C("Audio::start_voice", MPROF_COLOR_AUDIO);
    voice *v = NULL;
    for (int i = 0; i < MAX_VOICES && !v; i++)
        if (!au.voices[i].active)
            v = &au.voices[i];
    if (!v) { /* steal the quietest voice */
        v = &au.voices[0];
        for (int i = 1; i < MAX_VOICES; i++)
            if (au.voices[i].amp < v->amp)
                v = &au.voices[i];
    }
    v->active = 1;
    v->phase = 0;
    v->freq = freq;
    v->amp = amp;
    v->decay = decay;
    v->pan = rng_float(&au.rng);
    v->noise = rng_range(&au.rng, 0.0f, 0.3f);
    v->noise_state = (uint32_t)rng_next(&au.rng) | 1u;
}

static void mix_voice(voice *v)
{
    const float step = 2.0f * 3.14159265f * v->freq / RATE;
    const float gl = sqrtf(1.0f - v->pan), gr = sqrtf(v->pan);
    float *m = au.mix;
    for (int i = 0; i < FRAME_SAMPLES; i++) {
        v->noise_state ^= v->noise_state << 13;
        v->noise_state ^= v->noise_state >> 17;
        v->noise_state ^= v->noise_state << 5;
        float noise = (float)(v->noise_state >> 8) * (2.0f / 16777216.0f) - 1.0f;
        float s = (sinf(v->phase) + noise * v->noise) * v->amp;
        v->phase += step;
        if (v->phase > 6.2831853f)
            v->phase -= 6.2831853f;
        v->amp *= v->decay;
        m[2 * i] += s * gl;
        m[2 * i + 1] += s * gr;
    }
    if (v->amp < 1e-3f)
        v->active = 0;
}

void audio_frame(uint32_t impacts, float impact_energy, uint32_t soul_events)
{
    MPROF_ZONE_C("Audio::frame", MPROF_COLOR_AUDIO);
    uint64_t t0 = eng_slow_begin();
    {
        MPROF_ZONE_C("Audio::events", MPROF_COLOR_AUDIO);
        uint32_t n_impacts = impacts < 6 ? impacts : 6;
        float loud = impacts ? impact_energy / (float)impacts : 0;
        for (uint32_t i = 0; i < n_impacts; i++)
            start_voice(rng_range(&au.rng, 80, 320), fminf(0.05f + loud * 0.05f, 0.5f), 0.9990f);
        uint32_t n_cues = soul_events < 3 ? soul_events : 3;
        for (uint32_t i = 0; i < n_cues; i++)
            start_voice(rng_range(&au.rng, 440, 1200), 0.08f, 0.9995f);
    }
    {
        MPROF_ZONE_C("Audio::mix", MPROF_COLOR_AUDIO);
        memset(au.mix, 0, sizeof au.mix);
        au.active = 0;
        for (int i = 0; i < MAX_VOICES; i++)
            if (au.voices[i].active) {
                au.active++;
                mix_voice(&au.voices[i]);
            }
        MPROF_ZONE_VALUE(au.active);
    }
    {
        MPROF_ZONE_C("Audio::master", MPROF_COLOR_AUDIO);
        float peak = 0;
        for (int i = 0; i < FRAME_SAMPLES; i++) {
            au.lp_l += 0.35f * (au.mix[2 * i] - au.lp_l);
            au.lp_r += 0.35f * (au.mix[2 * i + 1] - au.lp_r);
            float l = tanhf(au.lp_l), r = tanhf(au.lp_r);
            au.mix[2 * i] = l;
            au.mix[2 * i + 1] = r;
            peak = fmaxf(peak, fmaxf(fabsf(l), fabsf(r)));
        }
        au.peak = peak;
        uint32_t bits;
        memcpy(&bits, &peak, 4);
        au.hash = (au.hash ^ bits) * 1099511628211ull;
    }
    MPROF_PLOT_INT("voices", au.active);
    eng_slowdown(ENG_SYS_AUDIO, t0);
}

uint32_t audio_voices(void)
{
    return au.active;
}

uint64_t audio_hash(void)
{
    return au.hash;
}
