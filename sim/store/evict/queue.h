/* sim/store/evict/queue.h — the single-queue policy skeleton shared by LRU and FIFO.
 *
 * Both keep one list of resident slots, newest at the head, and evict from
 * the tail; they differ only in what a hit does (LRU moves the slot to the
 * head, FIFO does nothing). These functions have the exact kv_evict_ops
 * signatures, so each policy's ops table names them directly and adds its
 * own on_hit. */
#ifndef KV_QUEUE_H
#define KV_QUEUE_H

#include "sim/index/dlist.h"
#include "sim/store/evict/evict.h"

typedef struct kv_queue {
    sim_links links;
    sim_list list;
} kv_queue;

int kv_queue_create(void **state, int64_t capacity, const json_t *params, sim_err *err);
void kv_queue_destroy(void *state);
void kv_queue_resize(void *state, int64_t nslots);
/* New slots enter at the head. */
void kv_queue_on_insert(void *state, int64_t slot, const kv_evict_req *req);
/* The oldest evictable slot (kv_list_victim_rotate). */
int64_t kv_queue_victim(void *state, const kv_evict_view *view);
void kv_queue_on_remove(void *state, int64_t slot);

#endif
