/* sim/config/schema.h — every config key with its type, unit, range and meaning.
 *
 * One table (sim/config/schema.c) that the loader enforces after merging
 * (a value of the wrong type or out of range exits 2 naming the key, the
 * value and the allowed range), that `kvsim config --schema` prints and
 * that the README's configuration reference is generated from
 * (`kvsim config --schema --markdown`; tests/test_config.c fails when
 * they differ). configs/default.json holds the defaults and names the
 * same keys (also tested). */
#ifndef SIM_CONFIG_SCHEMA_H
#define SIM_CONFIG_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "sim/util.h"

typedef enum sim_key_type {
    SIM_KEY_NUMBER,  /* a JSON number in [lo, hi] (lo excluded when lo_open) */
    SIM_KEY_INTEGER, /* a whole JSON number in [lo, hi] */
    SIM_KEY_SIZE,    /* bytes: a number or a string with a suffix ("1TB", "512GiB", "inf" when inf_ok) */
    SIM_KEY_BOOL,
    SIM_KEY_STRING, /* free text (a path) */
    SIM_KEY_CHOICE, /* one of `choices` ("a|b|c"); "" = names a registry checks later */
    SIM_KEY_PRESET, /* a preset name or an inline object (model, hardware) */
    SIM_KEY_OBJECT, /* an object its consumers check (policy.params) */
    SIM_KEY_ARRAY,  /* an array its reader checks element by element (faults) */
} sim_key_type;

typedef struct sim_config_key {
    const char *path;
    sim_key_type type;
    const char *unit; /* "" when none */
    double lo, hi;
    bool lo_open;  /* lo itself is not allowed */
    bool optional; /* may be absent (inline preset fields with a default) */
    bool inf_ok;   /* SIZE: "inf" is allowed */
    const char *choices;
    const char *meaning;
    bool zero_ok; /* 0 (off) is allowed besides [lo, hi] */
} sim_config_key;

size_t sim_config_key_count(void);
const sim_config_key *sim_config_key_at(size_t i); /* NULL past the end */
const sim_config_key *sim_config_key_find(const char *path);

/* The value at a dotted path of a config tree, NULL when absent. */
const json_t *sim_config_path_get(const json_t *root, const char *path);

/* Check every key of the table in a resolved config tree: present (unless
 * optional), of its type, in its range. The message names key, value and
 * range: "config key 'cost.prefill_mfu': 1e-300 is out of range (0, 1]". */
int sim_config_check_schema(const json_t *root, sim_err *err);
/* The keys of root[section] (a preset object: model, hardware) are schema
 * rows `section.KEY` and their values in type and range. */
int sim_config_check_preset_keys(const json_t *root, const char *section, sim_err *err);

/* Check one value against its row (type and range), with the message of
 * sim_config_check_schema. */
int sim_config_check_key(const sim_config_key *k, const json_t *v, sim_err *err);

/* The allowed values of k as text: "(0, 1]", "[1, 4096]", "lru|fifo", ... */
void sim_config_key_range(const sim_config_key *k, char *buf, size_t n);
const char *sim_config_key_type_name(sim_key_type t);

#endif
