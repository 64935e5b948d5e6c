/* sim/serving/row.c — the requests row fields common to every serving model
 * (sim/serving/serving.h), computed one way for all of them. */
#include "sim/serving/serving.h"

void sim_serving_row(const sim_config *cfg, const sim_request *r, sim_stage stage, int64_t first_token,
                     int64_t last_token, sim_topk *topk, sim_request_row *row)
{
    bool done = stage == SIM_STAGE_NONE;
    double ttft = done ? sim_ns_to_ms(first_token - r->arrival_ns) : -1;
    double tbt = done && r->output_len > 1 ? sim_topk_mean_s(topk) * 1e3 : -1;
    double slo_ttft = r->slo_ttft_ms > 0 ? r->slo_ttft_ms : cfg->slo_ttft_ms;
    double slo_tbt = r->slo_tbt_ms > 0 ? r->slo_tbt_ms : cfg->slo_tbt_ms;
    *row = (sim_request_row){
        .id = r->index,
        .line = r->line,
        .arrival_ms = sim_ns_to_ms(r->arrival_ns),
        .input_len = r->input_len,
        .output_len = r->output_len,
        .blocks = r->nblocks,
        .first_token_ms = first_token >= 0 ? sim_ns_to_ms(first_token) : -1,
        .done_ms = done ? sim_ns_to_ms(last_token) : -1,
        .ttft_ms = ttft,
        .tbt_ms = tbt,
        .e2e_ms = done ? sim_ns_to_ms(last_token - r->arrival_ns) : -1,
        .itl_ms = done && r->output_len > 1 ? sim_ns_to_ms(last_token - first_token) / (r->output_len - 1) : -1,
        .stage = stage,
        .effective = done && ttft <= slo_ttft && tbt <= slo_tbt,
    };
}
