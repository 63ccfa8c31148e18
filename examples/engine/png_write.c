/*
 * png_write.c - writes an RGBA8 image with libpng (for --png).
 *
 * libpng is the reference PNG implementation, packaged everywhere (Debian: libpng-dev), and
 * its simplified write API needs no setjmp handling.
 */
#include "render.h"

#ifdef ENGINE_HAVE_PNG

#include <errno.h>
#include <png.h>
#include <string.h>

int png_write_rgba(const char *path, const uint8_t *rgba, int w, int h)
{
    png_image img;
    memset(&img, 0, sizeof img);
    img.version = PNG_IMAGE_VERSION;
    img.width = (png_uint_32)w;
    img.height = (png_uint_32)h;
    img.format = PNG_FORMAT_RGBA;
    if (!png_image_write_to_file(&img, path, 0, rgba, 0, NULL)) {
        log_msg(ENG_LOG_ERROR, "renderer: cannot write %s: %s", path,
                img.message[0] ? img.message : strerror(errno));
        png_image_free(&img);
        return -1;
    }
    return 0;
}

#else

int png_write_rgba(const char *path, const uint8_t *rgba, int w, int h)
{
    (void)rgba;
    (void)w;
    (void)h;
    log_msg(ENG_LOG_ERROR, "renderer: cannot write %s: this build has no libpng (libpng-dev)",
            path);
    return -1;
}

#endif
