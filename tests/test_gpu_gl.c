/*
 * test_gpu_gl.c - mprof/gl.h on a real OpenGL driver without a display: EGL's surfaceless
 * platform (Mesa's llvmpipe in CI), a desktop GL 3.3 core context rendering into a framebuffer
 * object. Several passes per frame over several frames; then the capture is checked: every GPU
 * zone came back, spans nest as submitted, lie in plausible bounds after calibration, and the
 * CPU issued each zone before the GPU started it. Exits 77 (skipped) when no GL context can be
 * made.
 */
#define _POSIX_C_SOURCE 200809L
#define MPROF_ENABLE
#include "mprof/gl.h"

#include "gpu_capture.h"

#define GL_GLEXT_PROTOTYPES
#include <EGL/egl.h>
#include <EGL/eglext.h>
#include <GL/glcorearb.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#define SKIP_CODE 77
#define FRAMES 8
#define TARGET 256

static EGLDisplay dpy = EGL_NO_DISPLAY;
static EGLContext egl_ctx = EGL_NO_CONTEXT;
static GLuint fbo, tex, prog, vao;
static GLint loc_iterations;
static char capture_path[512];
static char why_not[256];

static mprof_gl_proc load(const char *name)
{
    return (mprof_gl_proc)eglGetProcAddress(name);
}

/* 0 ok; -1 no context (why_not says why). */
static int egl_init(void)
{
    PFNEGLGETPLATFORMDISPLAYEXTPROC get_display =
        (PFNEGLGETPLATFORMDISPLAYEXTPROC)eglGetProcAddress("eglGetPlatformDisplayEXT");
    if (get_display)
        dpy = get_display(EGL_PLATFORM_SURFACELESS_MESA, EGL_DEFAULT_DISPLAY, NULL);
    if (dpy == EGL_NO_DISPLAY)
        dpy = eglGetDisplay(EGL_DEFAULT_DISPLAY);
    EGLint major = 0, minor = 0;
    if (dpy == EGL_NO_DISPLAY || !eglInitialize(dpy, &major, &minor)) {
        snprintf(why_not, sizeof why_not, "no EGL display (install libegl-mesa0)");
        return -1;
    }
    if (!eglBindAPI(EGL_OPENGL_API)) {
        snprintf(why_not, sizeof why_not, "EGL cannot bind desktop OpenGL");
        return -1;
    }
    const EGLint cfg_attr[] = {EGL_RENDERABLE_TYPE, EGL_OPENGL_BIT, EGL_NONE};
    EGLConfig cfg = NULL;
    EGLint n = 0;
    if (!eglChooseConfig(dpy, cfg_attr, &cfg, 1, &n) || n < 1)
        cfg = NULL; /* EGL_KHR_no_config_context */
    const EGLint ctx_attr[] = {EGL_CONTEXT_MAJOR_VERSION, 3, EGL_CONTEXT_MINOR_VERSION, 3,
                               EGL_CONTEXT_OPENGL_PROFILE_MASK,
                               EGL_CONTEXT_OPENGL_CORE_PROFILE_BIT, EGL_NONE};
    egl_ctx = eglCreateContext(dpy, cfg, EGL_NO_CONTEXT, ctx_attr);
    if (egl_ctx == EGL_NO_CONTEXT ||
        !eglMakeCurrent(dpy, EGL_NO_SURFACE, EGL_NO_SURFACE, egl_ctx)) {
        snprintf(why_not, sizeof why_not, "no surfaceless GL 3.3 core context (EGL error 0x%x)",
                 (unsigned)eglGetError());
        return -1;
    }
    return 0;
}

static void egl_free(void)
{
    if (dpy != EGL_NO_DISPLAY) {
        eglMakeCurrent(dpy, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
        if (egl_ctx != EGL_NO_CONTEXT)
            eglDestroyContext(dpy, egl_ctx);
        eglTerminate(dpy);
    }
    dpy = EGL_NO_DISPLAY;
    egl_ctx = EGL_NO_CONTEXT;
}

static GLuint shader(GLenum type, const char *src)
{
    GLuint s = glCreateShader(type);
    glShaderSource(s, 1, &src, NULL);
    glCompileShader(s);
    GLint ok = 0;
    glGetShaderiv(s, GL_COMPILE_STATUS, &ok);
    if (!ok) {
        char log[1024];
        glGetShaderInfoLog(s, sizeof log, NULL, log);
        fprintf(stderr, "shader: %s\n", log);
    }
    return s;
}

static int gl_init(void)
{
    static const char *vs = "#version 330 core\n"
                            "void main() {\n"
                            "  vec2 p = vec2(float((gl_VertexID << 1) & 2), float(gl_VertexID & 2));\n"
                            "  gl_Position = vec4(p * 2.0 - 1.0, 0.0, 1.0);\n"
                            "}\n";
    static const char *fs = "#version 330 core\n"
                            "uniform int iterations;\n"
                            "out vec4 color;\n"
                            "void main() {\n"
                            "  vec2 uv = gl_FragCoord.xy / 256.0;\n"
                            "  float a = uv.x, b = uv.y;\n"
                            "  for (int k = 0; k < iterations; k++) {\n"
                            "    a = fract(a * 1.7 + sin(b));\n"
                            "    b = fract(b * 1.3 + cos(a));\n"
                            "  }\n"
                            "  color = vec4(a, b, 0.5, 1.0);\n"
                            "}\n";
    prog = glCreateProgram();
    glAttachShader(prog, shader(GL_VERTEX_SHADER, vs));
    glAttachShader(prog, shader(GL_FRAGMENT_SHADER, fs));
    glLinkProgram(prog);
    GLint ok = 0;
    glGetProgramiv(prog, GL_LINK_STATUS, &ok);
    if (!ok)
        return -1;
    loc_iterations = glGetUniformLocation(prog, "iterations");
    glGenVertexArrays(1, &vao);
    glGenTextures(1, &tex);
    glBindTexture(GL_TEXTURE_2D, tex);
    glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, TARGET, TARGET, 0, GL_RGBA, GL_UNSIGNED_BYTE, NULL);
    glGenFramebuffers(1, &fbo);
    glBindFramebuffer(GL_FRAMEBUFFER, fbo);
    glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, tex, 0);
    if (glCheckFramebufferStatus(GL_FRAMEBUFFER) != GL_FRAMEBUFFER_COMPLETE)
        return -1;
    glViewport(0, 0, TARGET, TARGET);
    return glGetError() == GL_NO_ERROR ? 0 : -1;
}

static void gl_free(void)
{
    glDeleteFramebuffers(1, &fbo);
    glDeleteTextures(1, &tex);
    glDeleteVertexArrays(1, &vao);
    glDeleteProgram(prog);
}

static void draw(int iterations)
{
    glUseProgram(prog);
    glUniform1i(loc_iterations, iterations);
    glBindVertexArray(vao);
    glDrawArrays(GL_TRIANGLES, 0, 3);
}

/* Two frames in flight, as a swap chain would allow: frame N waits for frame N - 2's fence. */
static GLsync in_flight[2];

static void frame(mprof_gl_ctx *gl, int f)
{
    GLsync *sync = &in_flight[f % 2];
    if (*sync) {
        glClientWaitSync(*sync, GL_SYNC_FLUSH_COMMANDS_BIT, 10000000000ull);
        glDeleteSync(*sync);
        *sync = NULL;
    }
    MPROF_GL_COLLECT(gl);
    {
        MPROF_GL_ZONE_C(gl, "Frame", MPROF_COLOR_RENDERER);
        {
            MPROF_GL_ZONE(gl, "Shadow");
            glClear(GL_COLOR_BUFFER_BIT);
            draw(16);
        }
        {
            MPROF_GL_ZONE(gl, "Lighting");
            draw(64);
        }
        uint32_t post = MPROF_GL_ZONE_BEGIN(gl, "Post");
        {
            MPROF_GL_ZONE(gl, "Blur");
            draw(8);
        }
        MPROF_GL_ZONE_END(gl, post);
    }
    *sync = glFenceSync(GL_SYNC_GPU_COMMANDS_COMPLETE, 0);
    glFlush();
    MPROF_FRAME_MARK();
}

static const char *const zone_names[] = {"Frame", "Shadow", "Lighting", "Post", "Blur"};

static void test_gl_zones(void **state)
{
    (void)state;
    gc_temp_path(capture_path, sizeof capture_path, "test_gpu_gl");
    mprof_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.capture_path = capture_path;
    cfg.listen = MPROF_TOGGLE_OFF;
    cfg.invariant_check = MPROF_TOGGLE_OFF;
    assert_int_equal(mprof_startup(&cfg), MPROF_OK);
    int64_t t_start = (int64_t)mprof_now_ns();
    assert_int_equal(gl_init(), 0);

    mprof_gl_config c;
    memset(&c, 0, sizeof c);
    c.get_proc_address = load;
    c.name = "GL";
    c.n_queries = 64; /* the ring wraps over the run */
    mprof_gl_ctx *gl = NULL;
    assert_int_equal(mprof_gl_context_create(&c, &gl), MPROF_OK);
    assert_non_null(gl);
    for (int f = 0; f < FRAMES; f++)
        frame(gl, f);
    glFinish();
    for (int i = 0; i < 2; i++)
        if (in_flight[i])
            glDeleteSync(in_flight[i]);
    mprof_gl_context_destroy(gl);
    gl_free();
    assert_int_equal(glGetError(), GL_NO_ERROR);
    mprof_stats st;
    mprof_get_stats(&st);
    mprof_shutdown();
    int64_t t_end = (int64_t)mprof_now_ns();
    assert_int_equal(st.gpu_queries_lost, 0);

    gc_capture cap;
    assert_int_equal(gc_read(capture_path, &cap), 0);
    uint32_t id = 0;
    for (uint32_t i = 1; i <= GC_MAX_CTX; i++)
        if (cap.ctx[i].seen)
            id = i;
    assert_int_not_equal(id, 0);
    assert_int_equal(cap.ctx[id].api, MPROF_GPU_API_OPENGL);
    assert_true(cap.ctx[id].n_calibrations >= 1);
    assert_int_equal(cap.n_zones, FRAMES * 5);
    assert_int_equal(cap.stray_times, 0);
    /* GL_TIMESTAMP is read between two CPU clock reads: error of a few microseconds. */
    const double tol_ns = 200000.0;
    for (int i = 0; i < cap.n_zones; i++) {
        gc_zone *z = &cap.zones[i];
        assert_string_equal(z->name, zone_names[i % 5]);
        assert_true(z->got_begin && z->got_end);
        assert_true(z->gpu_end >= z->gpu_begin);
        double gb = gc_gpu_to_cpu_ns(&cap, id, z->gpu_begin);
        double ge = gc_gpu_to_cpu_ns(&cap, id, z->gpu_end);
        assert_true(gb >= (double)t_start - tol_ns);
        assert_true(ge <= (double)t_end + tol_ns);
        assert_true((double)z->cpu_begin_ns <= gb + tol_ns);
        int depth_expected = i % 5 == 0 ? 0 : (i % 5 == 4 ? 2 : 1);
        assert_int_equal(z->depth, depth_expected);
        if (z->parent >= 0) {
            gc_zone *p = &cap.zones[z->parent];
            assert_true(p->gpu_begin <= z->gpu_begin);
            assert_true(z->gpu_end <= p->gpu_end);
        }
        if (getenv("MPROF_TEST_VERBOSE"))
            fprintf(stderr, "  %-9s gpu start %+9.0f ns after issue, %8.0f ns\n", z->name,
                    gb - (double)z->cpu_begin_ns, ge - gb);
    }
    for (int f = 0; f < FRAMES; f++) {
        gc_zone *z = &cap.zones[f * 5];
        assert_true(z[1].gpu_begin <= z[2].gpu_begin && z[2].gpu_begin <= z[3].gpu_begin);
    }
    gc_free(&cap);
    if (!getenv("MPROF_TEST_KEEP"))
        remove(capture_path);
}

static void test_gl_bad_config(void **state)
{
    (void)state;
    mprof_gl_ctx *gl = (mprof_gl_ctx *)1;
    mprof_gl_config c;
    memset(&c, 0, sizeof c);
    assert_int_equal(mprof_gl_context_create(&c, &gl), MPROF_ERR_INVALID);
    assert_null(gl);
    assert_int_equal(mprof_gl_collect(NULL), 0);
    mprof_gl_context_destroy(NULL);
}

int main(void)
{
    if (egl_init() != 0) {
        printf("skipped: %s\n", why_not);
        egl_free();
        return SKIP_CODE;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gl_bad_config),
        cmocka_unit_test(test_gl_zones),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    egl_free();
    return rc;
}
