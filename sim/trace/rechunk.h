/* sim/trace/rechunk.h — coarsen a Mooncake trace's hash blocks by an
 * integer factor, exactly (`kvsim trace rechunk`, docs/trace.md).
 *
 * A trace's hash_ids name blocks of M tokens, and a block's identity is its
 * id together with every id before it (trace.h: keys chain). Blocks of
 * N = f·M tokens are then groups of f consecutive fine blocks, and a coarse
 * block is shared by two requests iff their fine ids agree up to and
 * including its last fine block. So coarse block j of a request gets, as
 * its id, the number (0, 1, 2, ... in order of first appearance) of the
 * chained key of its fine ids up to fine block f·j + f − 1.
 *
 * The last coarse block of a request whose fine ids do not fill it (its
 * input ends inside it) covers fewer fine blocks: its key is the chained
 * key up to the request's last fine id, which no full coarse block has, so
 * it stays distinct from every full block and is shared only with requests
 * whose whole fine prefix is the same. A request whose hash_ids stop short
 * of ceil(input_length / M) (an uncacheable tail) keeps only the coarse
 * blocks its ids fill. Refining (N < M) would invent prefix structure the
 * trace does not have, and is refused, as is an N that is not a multiple
 * of M. Every other field of a line is kept. */
#ifndef SIM_RECHUNK_H
#define SIM_RECHUNK_H

#include <stdint.h>
#include <stdio.h>

#include "sim/util.h"

typedef struct sim_rechunk_stats {
    int64_t requests;
    int64_t fine_blocks, coarse_blocks;     /* ids read, ids written */
    int64_t fine_distinct, coarse_distinct; /* distinct chained keys; -1: not counted (key ids) */
} sim_rechunk_stats;

/* What a coarse block's id is. FIRST: its number (0, 1, 2, ...) in order
 * of first appearance, which needs every coarse key met before (and the
 * distinct counts every fine one): memory grows with the distinct blocks.
 * KEY: its chained key itself (less the top bit): the same blocks are
 * shared, as exactly as the keys are told apart (64-bit hashes, as every
 * replay's), in constant memory, but the ids are large numbers and the
 * distinct blocks are not counted. A replay gives the same results from
 * either (it only compares blocks). */
typedef enum sim_rechunk_ids { SIM_RECHUNK_IDS_FIRST, SIM_RECHUNK_IDS_KEY } sim_rechunk_ids;

/* 0 when to_tokens is a multiple f ≥ 1 of from_tokens, else -1 with err
 * saying why (a finer target, or not a multiple). */
int sim_rechunk_check(int from_tokens, int to_tokens, sim_err *err);

/* Read the trace at path (plain or gzip; "-" = stdin) and write it to out
 * (out_name in messages) with coarse hash_ids, numbered as ids says. Errors name file and line:
 * a line that is not a JSON object, no hash_ids, a segment trace, more
 * hash_ids than ceil(input_length / from_tokens) (the trace's blocks are
 * smaller: --from-block-tokens), a write error. */
int sim_rechunk(const char *path, int from_tokens, int to_tokens, sim_rechunk_ids ids, FILE *out, const char *out_name,
                sim_rechunk_stats *st, sim_err *err);

#endif
