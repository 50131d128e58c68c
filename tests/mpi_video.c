/* `mpirun -np 2 ravlt video` end to end (built and registered by CMake only with
 * -DRAVLT_MPI=ON, as test mpi_video; a build without MPI has no such test rather than a
 * skipped one). The one-process runs use 1 thread, as each of the 2 ranks does on 2 cores.
 *  - two files over 2 ranks (--out-dir): each file's JSON lines and MJPG overlay video are
 *    byte-identical to the one-process run's, with the right frame count and size;
 *  - one file split into 2 frame ranges (seeking, and --no-seek): JSON lines byte-identical
 *    to one process (a segmentor with --every 2, a detector with masks and --every 3); the
 *    MJPG output byte-identical (so every rank decoded exactly its frames and drew the same
 *    overlays); an H.264 .mp4 output has the right frame count and size (its bytes depend on
 *    the encoder's thread count, which follows the CPUs a rank is bound to); no parts left;
 *  - rank 0 states ranks and threads per rank;
 *  - failures: a missing file on rank 1 and a file that breaks inside rank 1's range are
 *    reported once by rank and input, the run exits non-zero, no output is left for them;
 *    cameras and --show are refused; mpirun -np 1 is a plain run. */
#define _POSIX_C_SOURCE 200809L
#include "test_util.h"

#include "formats/image.h"
#include "video_test_util.h"

#include <unistd.h>

#define SAMPLES "/usr/share/doc/opencv-doc/examples/data"
#define MPI RV_MPIEXEC " --allow-run-as-root --oversubscribe --mca btl_vader_single_copy_mechanism none"

static char tmp[256];
static char seg[1024], det[1024];

static int setup(void **state) {
  (void)state;
  snprintf(tmp, sizeof tmp, "/tmp/rv_mpi_video_XXXXXX");
  snprintf(seg, sizeof seg, "%s", fixture_path("e2e/semantic_fpn/checkpoint.pth"));
  snprintf(det, sizeof det, "%s", fixture_path("e2e/mask_rcnn/checkpoint.pth"));
  if (!path_exists(seg) || !path_exists(det) || !path_exists(SAMPLES "/vtest.avi")) return -1;
  if (test_run("'%s' --version | grep -q '(MPI)'", RV_BIN) != 0) return -1;
  return mkdtemp(tmp) ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  test_run("rm -rf '%s'", tmp);
  return 0;
}

static void expect_video(const char *path, long n, int w, int h) {
  int vw = 0, vh = 0;
  assert_int_equal(test_video_frames(path, &vw, &vh), n);
  assert_int_equal(vw, w);
  assert_int_equal(vh, h);
}

static long lines_of(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  long n = 0;
  int c;
  while ((c = fgetc(f)) != EOF) n += c == '\n';
  fclose(f);
  return n;
}

static void test_two_files(void **state) {
  (void)state;
  const char *args = "--max-frames 10 --size 64x96 --every 2";
  assert_int_equal(test_run("'%s' --quiet --threads 1 video --weights '%s' %s " SAMPLES "/vtest.avi " SAMPLES
                            "/Megamind.avi --out-dir %s/one --out-ext avi",
                            RV_BIN, seg, args, tmp),
                   0);
  assert_int_equal(test_run(MPI " -np 2 '%s' video --weights '%s' %s " SAMPLES "/vtest.avi " SAMPLES
                            "/Megamind.avi --out-dir %s/m --out-ext avi 2> %s/two.err",
                            RV_BIN, seg, args, tmp, tmp),
                   0);
  assert_int_equal(test_run("grep -q '^ravlt: MPI: 2 ranks (2 on this node), 1 thread per rank' %s/two.err", tmp), 0);
  assert_int_equal(test_run("test $(grep -c 'per rank' %s/two.err) -eq 1", tmp), 0);
  assert_int_equal(test_run("grep -q 'MPI: 2 inputs over 2 ranks' %s/two.err", tmp), 0);
  assert_int_equal(test_run("grep -q 'MPI: 2 ranks: 20 frame(s) read, 10 processed, 20 written' %s/two.err", tmp), 0);
  static const char *names[] = {"vtest.jsonl", "vtest.avi", "Megamind.jsonl", "Megamind.avi"};
  for (int i = 0; i < 4; i++)
    if (test_run("cmp -s %s/one/%s %s/m/%s", tmp, names[i], tmp, names[i]) != 0)
      fail_msg("%s differs between 2 ranks and one process", names[i]);
  assert_int_equal(test_run("test $(ls %s/m | wc -l) -eq 4", tmp), 0);
  char p[512];
  snprintf(p, sizeof p, "%s/m/vtest.avi", tmp);
  expect_video(p, 10, 768, 576);
  snprintf(p, sizeof p, "%s/m/Megamind.avi", tmp);
  expect_video(p, 10, 720, 528);
  snprintf(p, sizeof p, "%s/m/vtest.jsonl", tmp);
  assert_int_equal(lines_of(p), 5);
}

static void test_split_segmentor(void **state) {
  (void)state;
  const char *args = "--max-frames 24 --size 64x96 --every 2";
  assert_int_equal(test_run("mkdir -p %s/s && '%s' --quiet --threads 1 video --weights '%s' %s " SAMPLES
                            "/vtest.avi --output %s/s/one.avi --json %s/s/one.jsonl",
                            tmp, RV_BIN, seg, args, tmp, tmp),
                   0);
  assert_int_equal(test_run(MPI " -np 2 '%s' video --weights '%s' %s " SAMPLES
                            "/vtest.avi --output %s/s/m.avi --json %s/s/m.jsonl 2> %s/split.err",
                            RV_BIN, seg, args, tmp, tmp, tmp),
                   0);
  assert_int_equal(test_run("grep -q 'vtest.avi (24 frames, --max-frames) split into 2 ranges at multiples of 2, by seeking' "
                            "%s/split.err",
                            tmp),
                   0);
  assert_int_equal(test_run("grep -q 'MPI: 2 ranks: 24 frame(s) read, 12 processed, 24 written' %s/split.err", tmp), 0);
  /* the totals in the closing lines are the summary line's */
  assert_int_equal(test_run("grep -qx 'ravlt video: wrote %s/s/m.avi (24 frames)' %s/split.err",
                            tmp, tmp), 0);
  assert_int_equal(test_run("grep -qx 'ravlt video: wrote %s/s/m.jsonl (12 lines)' %s/split.err",
                            tmp, tmp), 0);
  assert_int_equal(test_run("cmp -s %s/s/one.jsonl %s/s/m.jsonl", tmp, tmp), 0);
  assert_int_equal(test_run("cmp -s %s/s/one.avi %s/s/m.avi", tmp, tmp), 0);
  char p[512];
  snprintf(p, sizeof p, "%s/s/m.jsonl", tmp);
  assert_int_equal(lines_of(p), 12);
  snprintf(p, sizeof p, "%s/s/m.avi", tmp);
  expect_video(p, 24, 768, 576);
  /* --no-seek: the ranks decode from frame 0 instead; H.264 .mp4 */
  assert_int_equal(test_run(MPI " -np 2 '%s' --quiet video --no-seek --weights '%s' %s " SAMPLES
                            "/vtest.avi --output %s/s/n.mp4 --json %s/s/n.jsonl",
                            RV_BIN, seg, args, tmp, tmp),
                   0);
  assert_int_equal(test_run("cmp -s %s/s/one.jsonl %s/s/n.jsonl", tmp, tmp), 0);
  snprintf(p, sizeof p, "%s/s/n.mp4", tmp);
  expect_video(p, 24, 768, 576);
  assert_int_equal(test_run("test \"$(ls %s/s | tr '\\n' ' ')\" = 'm.avi m.jsonl n.jsonl n.mp4 one.avi one.jsonl '", tmp), 0);
  /* fewer --every steps than ranks: rank 0's range is empty, rank 1 runs frames 0..5 */
  assert_int_equal(test_run("'%s' --quiet --threads 1 video --weights '%s' --max-frames 6 --size 64x96 --every 8 " SAMPLES
                            "/vtest.avi --output %s/s/e1.avi --json %s/s/e1.jsonl",
                            RV_BIN, seg, tmp, tmp),
                   0);
  assert_int_equal(test_run(MPI " -np 2 '%s' --quiet video --weights '%s' --max-frames 6 --size 64x96 --every 8 " SAMPLES
                            "/vtest.avi --output %s/s/e2.avi --json %s/s/e2.jsonl",
                            RV_BIN, seg, tmp, tmp),
                   0);
  assert_int_equal(test_run("cmp -s %s/s/e1.jsonl %s/s/e2.jsonl && cmp -s %s/s/e1.avi %s/s/e2.avi", tmp, tmp, tmp, tmp), 0);
  snprintf(p, sizeof p, "%s/s/e2.jsonl", tmp);
  assert_int_equal(lines_of(p), 1);
  assert_int_equal(test_run("rm %s/s/e1.* %s/s/e2.*", tmp, tmp), 0);
  /* mpirun -np 1 is a plain run */
  assert_int_equal(test_run(RV_MPIEXEC " --allow-run-as-root -np 1 '%s' --quiet --threads 1 video --weights '%s' %s " SAMPLES
                            "/vtest.avi --json %s/s/one1.jsonl",
                            RV_BIN, seg, args, tmp),
                   0);
  assert_int_equal(test_run("cmp -s %s/s/one.jsonl %s/s/one1.jsonl", tmp, tmp), 0);
}

/* A detector with masks: boxes, scores and RLE strings byte-identical across the seam. */
static void test_split_detector(void **state) {
  (void)state;
  const char *args = "--max-frames 12 --size 96x128 --every 3 --score-thr 0.05";
  assert_int_equal(test_run("mkdir -p %s/d && '%s' --quiet --threads 1 video --weights '%s' %s " SAMPLES
                            "/Megamind.avi --json %s/d/one.jsonl",
                            tmp, RV_BIN, det, args, tmp),
                   0);
  assert_int_equal(test_run(MPI " -np 2 '%s' --quiet video --weights '%s' %s " SAMPLES "/Megamind.avi --json %s/d/m.jsonl",
                            RV_BIN, det, args, tmp),
                   0);
  assert_int_equal(test_run("grep -q '\"counts\"' %s/d/one.jsonl", tmp), 0);
  assert_int_equal(test_run("cmp -s %s/d/one.jsonl %s/d/m.jsonl", tmp, tmp), 0);
  char p[512];
  snprintf(p, sizeof p, "%s/d/m.jsonl", tmp);
  assert_int_equal(lines_of(p), 4);
}

static void test_failures(void **state) {
  (void)state;
  /* several inputs: the second (sorted) runs on rank 1 and does not exist */
  assert_int_equal(test_run("mkdir -p %s/f && cp " SAMPLES "/vtest.avi %s/f/a.avi", tmp, tmp), 0);
  assert_int_equal(test_run(MPI " -np 2 '%s' video --weights '%s' --max-frames 4 --size 64x96 %s/f/b.avi %s/f/a.avi "
                            "--out-dir %s/f/out > /dev/null 2> %s/f/err",
                            RV_BIN, seg, tmp, tmp, tmp, tmp),
                   1);
  assert_int_equal(test_run("grep -q '^ravlt video: rank 1 of 2: video %s/f/b.avi: no such file' %s/f/err", tmp, tmp), 0);
  assert_int_equal(test_run("test $(grep -c 'ravlt video: rank' %s/f/err) -eq 1", tmp), 0);
  assert_int_equal(test_run("test \"$(ls %s/f/out | tr '\\n' ' ')\" = 'a.jsonl a.mp4 '", tmp), 0); /* a.avi complete */
  /* one file that breaks inside rank 1's range (its header announces 270 frames, 39 decode) */
  assert_int_equal(test_run("head -c 200000 " SAMPLES "/Megamind.avi > %s/f/short.avi", tmp), 0);
  assert_int_equal(test_run(MPI " -np 2 '%s' video --weights '%s' --size 64x96 %s/f/short.avi --output %s/f/s.avi "
                            "--json %s/f/s.jsonl > /dev/null 2> %s/f/err2",
                            RV_BIN, seg, tmp, tmp, tmp, tmp),
                   1);
  assert_int_equal(test_run("grep -q '^ravlt video: rank [01] of 2: .*short.avi' %s/f/err2", tmp), 0);
  assert_int_equal(test_run("test $(grep -c 'ravlt video: rank' %s/f/err2) -eq 1", tmp), 0);
  assert_int_equal(test_run("ls %s/f | grep -q '^s\\.'", tmp), 1); /* no output, no part, no temporary */
  /* the same file split by --max-frames 38 decodes: both ranks' ranges are whole */
  assert_int_equal(test_run(MPI " -np 2 '%s' --quiet video --weights '%s' --size 64x96 --max-frames 38 %s/f/short.avi "
                            "--json %s/f/s.jsonl",
                            RV_BIN, seg, tmp, tmp),
                   0);
  char p[512];
  snprintf(p, sizeof p, "%s/f/s.jsonl", tmp);
  assert_int_equal(lines_of(p), 38);
  /* live sources and windows need one process */
  assert_int_equal(test_run(MPI " -np 2 '%s' video --weights '%s' 0 2> %s/f/err3", RV_BIN, seg, tmp), 2);
  assert_int_equal(test_run("grep -q \"cameras and streams run in one process\" %s/f/err3", tmp), 0);
  assert_int_equal(test_run("test $(grep -c 'ravlt video:' %s/f/err3) -eq 1", tmp), 0); /* rank 0 only */
  assert_int_equal(test_run(MPI " -np 2 '%s' video --weights '%s' --show " SAMPLES "/vtest.avi 2> %s/f/err3", RV_BIN, seg, tmp),
                   2);
  assert_int_equal(test_run("grep -q -- '--show runs in one process' %s/f/err3", tmp), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_two_files),
      cmocka_unit_test(test_split_segmentor),
      cmocka_unit_test(test_split_detector),
      cmocka_unit_test(test_failures),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
