/* Video helpers shared by tests/cli/test_video.c and tests/mpi_video.c. */
#ifndef RV_TESTS_VIDEO_TEST_UTIL_H
#define RV_TESTS_VIDEO_TEST_UTIL_H

#include "formats/image.h"

/* Frames of a video and its size as OpenCV reads it back (-1 if it does not open or breaks). */
static inline long test_video_frames(const char *path, int *w, int *h) {
  rv_ctx *ctx = rv_ctx_create();
  rv_video_reader *r;
  long n = -1;
  if (rv_video_open(&r, path, ctx) == RV_OK) {
    rv_video_info info = rv_video_get_info(r);
    *w = info.width;
    *h = info.height;
    rv_image f = {0};
    int got = 0;
    n = 0;
    rv_status st;
    while ((st = rv_video_read(r, &f, &got, ctx)) == RV_OK && got) n++;
    if (st != RV_OK) n = -1;
    rv_image_free(&f);
    rv_video_close(r);
  }
  rv_ctx_free(ctx);
  return n;
}

#endif
