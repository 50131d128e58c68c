/* `mpirun -np N ravlt eval ...`: the ranks of an MPI job split the images of one evaluation
 * (rank r runs shard r/N, see apps/shard.h) and rank 0 evaluates once, so the numbers equal a
 * single-process run (ADE20K int64 areas summed; COCO detections gathered into the one-run
 * order). Built with -DRAVLT_MPI=ON (compile definition RAVLT_WITH_MPI); without it every
 * function here is a one-process stub and MPI is never needed.
 *
 *   rv_mpi_start(&argc, &argv, &rv_cli); // main: MPI_Init only when launched by mpirun/srun
 *   if (rv_mpi_size() > 1) ... rank r runs shard r/N ...
 *   st = rv_mpi_agree(st, ctx);          // every rank: the first failure, named by rank
 *   rv_mpi_sum_i64(areas, n, ctx);       // rank 0 gets the sums
 *   rv_mpi_end();                        // main: MPI_Finalize when started
 *
 * Collectives must be reached by every rank: call them on every path, after the work. */
#ifndef RV_APPS_MPI_RUN_H
#define RV_APPS_MPI_RUN_H

#include "apps/opts.h"
#include "core/rv.h"
#include "datasets/coco.h"
#include "eval/segmetrics.h"

#include <stddef.h>
#include <stdint.h>

/* 1 when this binary was built with MPI. */
int rv_mpi_built(void);
/* The environment says we run under an MPI launcher (OMPI_COMM_WORLD_SIZE, PMI_SIZE,
 * PMIX_RANK): initialise MPI then, and pick threads per rank (cores / ranks on this node,
 * capped by the CPUs the launcher bound the rank to) into g->threads unless --threads was
 * given; ranks other than 0 get g->quiet (rank 0 prints). Returns 0,
 * or -1 after printing why (launched under MPI but built without it: not an error when the
 * job has one rank). */
int rv_mpi_start(int *argc, char ***argv, rv_opts_globals *g);
void rv_mpi_end(void);
int rv_mpi_rank(void);
int rv_mpi_size(void); /* 1 when not under MPI */

/* Every rank passes its status; all get RV_OK when all succeeded, else the status of the
 * lowest failing rank, with rank 0's ctx message "rank R: <its message>". */
rv_status rv_mpi_agree(rv_status st, rv_ctx *ctx);
/* Element-wise sum of buf over the ranks into rank 0's buf (exact int64). */
rv_status rv_mpi_sum_i64(int64_t *buf, size_t n, rv_ctx *ctx);
/* Gathers every rank's bytes to rank 0: *all (malloc'd, rank 0 only) holds rank r's bytes at
 * offs[r] .. offs[r + 1] (offs: size + 1 entries, malloc'd). Other ranks get NULLs. */
rv_status rv_mpi_gather_bytes(char **all, size_t **offs, const void *buf, size_t len, rv_ctx *ctx);


/* ADE20K: a's four int64 count arrays and *n_images summed into rank 0's. */
rv_status rv_mpi_sum_areas(rv_seg_areas *a, size_t *n_images, rv_ctx *ctx);
/* COCO: every rank holds the detections of its images (rank r: sorted images k with
 * k mod size == r, in that order, grouped by image as eval's model mode appends them); rank 0
 * gets all of them in the one-process order (box, and seg when seg is non-NULL); the other
 * ranks' lists are emptied. Exact: the doubles and RLE runs travel as bytes. */
rv_status rv_mpi_gather_coco(rv_coco_results *box, rv_coco_results *seg, const rv_coco *gt, rv_ctx *ctx);

#endif
