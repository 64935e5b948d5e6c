/* tests/test_cost_presets.c — every bundled hardware preset with every
 * model preset, in both cluster modes, under the default cost.compute
 * (auto: the measured tables where the preset names them, else the engine
 * or the roofline): a decode step and a prefill are finite and positive,
 * a decode step never shrinks as its batch grows (1, 16, 64, 256
 * sequences of 1,000 tokens of context each), and a prefill never shrinks
 * as its prompt grows (512, 4,096, 16,384 tokens). These are properties of
 * the work, whatever the tables' noise: a larger batch reads the same
 * weights and more KV, a longer prompt does every FLOP of a shorter one.
 * A pairing the config refuses (heads that a TP degree cannot split) is
 * counted and skipped; the rest must all be priced. The same invariants
 * were checked across 5,832 `kvsim cost` runs when they were written. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/testutil.h"

#include <dirent.h>
#include <math.h>

#include "sim/config/config.h"
#include "sim/cost/cost.h"

enum { MAX_PRESETS = 64 };

/* The preset names of configs/DIR (file names less .json), sorted. */
static int presets(const char *dir, char names[][64])
{
    struct dirent **ents;
    int n = scandir(dir, &ents, NULL, alphasort), k = 0;
    assert_true(n > 0);
    for (int i = 0; i < n; i++) {
        size_t len = strlen(ents[i]->d_name);
        if (len > 5 && !strcmp(ents[i]->d_name + len - 5, ".json") && k < MAX_PRESETS)
            snprintf(names[k++], 64, "%.*s", (int)(len - 5), ents[i]->d_name);
        free(ents[i]);
    }
    free(ents);
    return k;
}

/* The pairing's times, checked; false when the config refuses it. */
static bool check_pair(const char *hw, const char *model, const char *mode)
{
    char h[96], m[96], md[96];
    snprintf(h, sizeof h, "hardware=%s", hw);
    snprintf(m, sizeof m, "model=%s", model);
    snprintf(md, sizeof md, "cluster.mode=\"%s\"", mode);
    char *sets[] = {h, m, md};
    sim_config cfg;
    sim_cost c;
    sim_err err = {{0}};
    if (sim_config_load(&cfg, NULL, sets, 3, &err)) fail_msg("%s %s: %s", hw, model, err.msg);
    bool ok = sim_cost_setup(&c, &cfg, &err) == 0;
    if (ok) {
        static const int batch[] = {1, 16, 64, 256}, prompt[] = {512, 4096, 16384};
        double last = 0;
        for (size_t i = 0; i < sizeof batch / sizeof batch[0]; i++) {
            double t = sim_cost_decode_terms(&c, batch[i], (int64_t)batch[i] * 1000).total_s;
            if (!(isfinite(t) && t > 0 && t >= last))
                fail_msg("%s %s %s: decode of %d x 1000 takes %g s after %g s", hw, model, mode, batch[i], t, last);
            last = t;
        }
        last = 0;
        for (size_t i = 0; i < sizeof prompt / sizeof prompt[0]; i++) {
            double t = sim_cost_prefill_s(&c, prompt[i], 0);
            if (!(isfinite(t) && t > 0 && t >= last))
                fail_msg("%s %s %s: prefill of %d takes %g s after %g s", hw, model, mode, prompt[i], t, last);
            last = t;
        }
    } else if (!strstr(err.msg, "cannot split evenly")) {
        fail_msg("%s %s %s: refused: %s", hw, model, mode, err.msg);
    }
    sim_config_free(&cfg);
    return ok;
}

static void test_every_preset_pair(void **state)
{
    static char hws[MAX_PRESETS][64], models[MAX_PRESETS][64];
    int nh = presets("configs/hardware", hws), nm = presets("configs/models", models), priced = 0, refused = 0;
    static const char *const modes[] = {"disaggregated", "aggregated"};
    for (int i = 0; i < nh; i++)
        for (int j = 0; j < nm; j++)
            for (int k = 0; k < 2; k++) check_pair(hws[i], models[j], modes[k]) ? priced++ : refused++;
    printf("%d hardware x %d model presets x 2 modes: %d priced, %d refused (heads a TP degree cannot split)\n", nh, nm,
           priced, refused);
    assert_true(priced > 10 * refused);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_every_preset_pair)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
