/* sim/config/schema.c — the config schema: one row per key, and its check.
 *
 * Ranges are what a run can mean, not what a machine has today: a TTFT SLO
 * up to 11.6 days, bytes up to 1e18 (an exabyte), periods from 1 ms. They
 * exist so that no value turns into an overflowed block count, an
 * unbounded loop of periodic events or a time that no int64 clock holds
 * (issue: "no silent wrong answers"). */
#include "sim/config/schema.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROW(p, t, u, l, h, ...)                                                                                        \
    {                                                                                                                  \
        .path = p, .type = t, .unit = u, .lo = l, .hi = h, __VA_ARGS__                                                 \
    }
#define NUM(p, u, l, h, m)    ROW(p, SIM_KEY_NUMBER, u, l, h, .meaning = m)
#define POS(p, u, h, m)       ROW(p, SIM_KEY_NUMBER, u, 0, h, .lo_open = true, .meaning = m)
#define INT(p, u, l, h, m)    ROW(p, SIM_KEY_INTEGER, u, l, h, .meaning = m)
#define SIZE(p, m)            ROW(p, SIM_KEY_SIZE, "bytes", 0, 1e18, .inf_ok = true, .meaning = m)
#define BOOL(p, m)            ROW(p, SIM_KEY_BOOL, "", 0, 0, .meaning = m)
#define CHOICE(p, c, m)       ROW(p, SIM_KEY_CHOICE, "", 0, 0, .choices = c, .meaning = m)
#define OFF_OR(p, u, l, h, m) ROW(p, SIM_KEY_NUMBER, u, l, h, .zero_ok = true, .meaning = m)
#define OTHER(p, t, m, ...)   ROW(p, t, "", 0, 0, .meaning = m, __VA_ARGS__)

static const sim_config_key keys[] = {
    OTHER("about", SIM_KEY_STRING, "a comment; ignored", .optional = true),
    OTHER("model", SIM_KEY_PRESET,
          "preset in `configs/models/` (Llama 2, 3 and 3.1, CodeLlama, Mistral, Mixtral, Qwen2.5, Qwen3 and "
          "DeepSeek-V3: docs/models.md lists them; `kvsim model import` writes one from a Hugging Face config.json) "
          "or an inline object with the `model.*` keys below"),
    OTHER("model.name", SIM_KEY_STRING, "the model's name in output", .optional = true),
    OTHER("model.about", SIM_KEY_STRING, "a comment; ignored", .optional = true),
    INT("model.layers", "", 1, 4096, "transformer layers"),
    INT("model.hidden", "", 1, 1 << 20, "hidden size"),
    INT("model.heads", "", 1, 65536, "attention heads"),
    INT("model.kv_heads", "", 1, 65536, "KV heads (GQA)"),
    INT("model.head_dim", "", 1, 65536, "head dimension"),
    INT("model.dtype_bytes", "bytes", 1, 16, "bytes per weight element (and per KV element: `model.kv_dtype`)"),
    ROW("model.kv_dtype", SIM_KEY_CHOICE, "", 0, 0, .optional = true, .choices = "auto|bf16|fp16|fp8|fp8_e4m3|fp8_e5m2",
        .meaning = "the KV cache's element type: `auto` (absent) = the weights' (`model.dtype_bytes`); bf16 and fp16 "
                   "2 bytes, fp8 1 byte. Sizes every KV byte: HBM capacity, tiers, transfers, hit-rate byte axes"),
    ROW("model.kv_lora_rank", SIM_KEY_INTEGER, "", 1, 65536, .optional = true,
        .meaning = "multi-head latent attention (DeepSeek-V2/V3): the compressed KV latent's size; a token then "
                   "caches `kv_lora_rank + qk_rope_head_dim` values per layer, not 2 × `kv_heads` × `head_dim`. "
                   "Absent = not MLA"),
    ROW("model.qk_rope_head_dim", SIM_KEY_INTEGER, "", 1, 65536, .optional = true,
        .meaning = "multi-head latent attention: the decoupled RoPE key's size, cached beside the latent (with "
                   "`model.kv_lora_rank`)"),
    ROW("model.q_lora_rank", SIM_KEY_INTEGER, "", 1, 65536, .optional = true,
        .meaning = "multi-head latent attention: the query latent's size (DeepSeek-V3 1536: queries are projected "
                   "down to it, then up to the heads); absent = queries projected from the hidden state directly"),
    ROW("model.weight_quant", SIM_KEY_CHOICE, "", 0, 0, .optional = true, .choices = "none|fp8_block",
        .meaning =
            "how the weights are quantized: `none` (absent) = plain `model.dtype_bytes` elements; `fp8_block` "
            "= FP8 with a scale per 128 x 128 block (DeepSeek-V3's checkpoint; needs `dtype_bytes` 1): the "
            "measured mode prices its GEMMs and fused MoE from the tables' fp8_block rows (docs/measured-mla.md)"),
    ROW("model.torch_dtype", SIM_KEY_CHOICE, "", 0, 0, .optional = true, .choices = "bfloat16|float16",
        .meaning = "the 16-bit type vLLM computes in: config.json's `torch_dtype`, as its `--dtype auto` takes it "
                   "(`bfloat16` absent; Llama 2's presets `float16`). The measured mode sends a `float16` "
                   "all-reduce that vLLM's symmetric-memory path refuses (it takes bf16 only) to NCCL's rows "
                   "(docs/measured.md §1)"),
    ROW("model.params", SIM_KEY_NUMBER, "", 0, 1e16, .lo_open = true, .optional = true,
        .meaning = "parameters (weights = params × dtype_bytes); absent = derived from the architecture when "
                   "`model.intermediate` and `model.vocab` are given (sim/config/model.h)"),
    ROW("model.intermediate", SIM_KEY_INTEGER, "", 1, 1 << 24, .optional = true,
        .meaning = "FFN intermediate size (gated MLP); absent = unknown"),
    ROW("model.vocab", SIM_KEY_INTEGER, "", 1, 1 << 24, .optional = true,
        .meaning = "vocabulary size; absent = unknown"),
    ROW("model.context_window", SIM_KEY_INTEGER, "tokens", 1, 1 << 30, .optional = true,
        .meaning = "the longest request (prompt and output) the model serves: its config.json's "
                   "`max_position_embeddings`, times a `yarn` or `linear` rope_scaling's factor, as vLLM derives its "
                   "default `max_model_len`; a run counts the longer requests and warns (vLLM refuses them), `kvsim "
                   "cost` warns of a longer context; absent = unknown, nothing checked"),
    ROW("model.tied_embeddings", SIM_KEY_BOOL, "", 0, 0, .optional = true,
        .meaning = "the LM head shares the input embedding's weights; absent = false"),
    ROW("model.experts", SIM_KEY_INTEGER, "", 1, 65536, .optional = true,
        .meaning = "routed experts per MoE layer of a mixture-of-experts model; absent = dense (docs/hardware.md)"),
    ROW("model.experts_per_token", SIM_KEY_INTEGER, "", 1, 65536, .optional = true,
        .meaning = "experts each token is routed to (mixture of experts)"),
    ROW("model.moe_intermediate", SIM_KEY_INTEGER, "", 1, 1 << 24, .optional = true,
        .meaning = "one expert's gated-MLP intermediate size; absent = `model.intermediate` (Mixtral)"),
    ROW("model.shared_experts", SIM_KEY_INTEGER, "", 1, 65536, .optional = true,
        .meaning = "experts of `model.moe_intermediate` every token uses besides its routed ones (DeepSeek); "
                   "absent = 0"),
    ROW("model.dense_layers", SIM_KEY_INTEGER, "", 1, 4096, .optional = true,
        .meaning = "the first layers keep a dense MLP of `model.intermediate` (first_k_dense_replace); absent = 0"),
    ROW("model.flops_a", SIM_KEY_NUMBER, "", 0, 1e6, .lo_open = true, .optional = true,
        .meaning = "prefill FLOPs term a of Mooncake Eq. 1 (default 4)"),
    ROW("model.flops_b", SIM_KEY_NUMBER, "", 0, 1e6, .lo_open = true, .optional = true,
        .meaning = "prefill FLOPs term b of Mooncake Eq. 1 (default 22)"),
    OTHER("hardware", SIM_KEY_PRESET,
          "preset in `configs/hardware/` (`a800x8`, `h800x8`, `h20x8`, `h100x1`, `h100x2`, `h100x4`, `h100x8`, "
          "`h200x1`, `cpu-local`) or an inline "
          "object with the `hardware.*` keys below"),
    OTHER("hardware.name", SIM_KEY_STRING, "the hardware's name in output", .optional = true),
    OTHER("hardware.about", SIM_KEY_STRING, "a comment; ignored", .optional = true),
    INT("hardware.gpus_per_node", "", 1, 1024, "GPUs per node (one instance = one node)"),
    NUM("hardware.tflops_per_gpu", "TFLOP/s", 1e-3, 1e6, "peak dense FLOP/s per GPU"),
    POS("hardware.hbm_bytes_per_gpu", "bytes", 1e15, "HBM per GPU"),
    NUM("hardware.hbm_GBps_per_gpu", "GB/s", 1e-3, 1e6, "HBM bandwidth per GPU"),
    NUM("hardware.h2d_GBps", "GB/s", 1e-3, 1e6, "DRAM → HBM bandwidth per node"),
    NUM("hardware.nic_Gbps", "Gbit/s", 1e-3, 1e7, "NIC bandwidth per node"),
    POS("hardware.dram_bytes", "bytes", 1e18, "DRAM per node (`kvsim plan` checks fits against it)"),
    NUM("hardware.ssd_read_GBps", "GB/s", 1e-3, 1e6, "SSD read bandwidth"),
    NUM("hardware.ssd_write_GBps", "GB/s", 1e-3, 1e6, "SSD write bandwidth"),
    NUM("hardware.ssd_latency_us", "µs", 0, 1e9, "SSD access latency"),
    ROW("hardware.hbm_efficiency", SIM_KEY_NUMBER, "", 0, 1, .lo_open = true, .optional = true,
        .meaning = "achievable fraction of the HBM bandwidth for streaming reads (decode); absent = 1 "
                   "(docs/cost-model.md)"),
    ROW("hardware.nvlink_GBps_per_gpu", SIM_KEY_NUMBER, "GB/s", 0, 1e6, .optional = true,
        .meaning = "GPU-to-GPU bandwidth per direction for the tensor-parallel all-reduce; absent or 0 = no "
                   "all-reduce term"),
    ROW("hardware.nvlink_efficiency", SIM_KEY_NUMBER, "", 0, 1, .lo_open = true, .optional = true,
        .meaning = "achievable fraction of `hardware.nvlink_GBps_per_gpu` in an all-reduce; absent = 1"),
    ROW("hardware.allreduce_latency_us", SIM_KEY_NUMBER, "µs", 0, 1e6, .optional = true,
        .meaning = "fixed time of one small all-reduce across the node's GPUs; absent = 0"),
    ROW("hardware.price_per_hour", SIM_KEY_NUMBER, "$/h", 0, 1e9, .optional = true,
        .meaning = "the price of one node-hour: an input kvsim never guesses (a quote, a cloud list price); "
                   "absent = not given (docs/hardware.md)"),
    ROW("hardware.dram_price_per_GB_hour", SIM_KEY_NUMBER, "$/GB·h", 0, 1e6, .optional = true,
        .meaning = "the price of one GB of the node's DRAM for an hour, an input like `price_per_hour`: `kvsim plan "
                   "slo` adds the KV DRAM it sizes at this price; absent = not priced (docs/planning.md)"),
    ROW("hardware.ssd_price_per_GB_hour", SIM_KEY_NUMBER, "$/GB·h", 0, 1e6, .optional = true,
        .meaning = "the price of one GB of the node's disk for an hour (as `dram_price_per_GB_hour`)"),
    ROW("hardware.ssd_bytes", SIM_KEY_NUMBER, "bytes", 0, 1e18, .optional = true,
        .meaning = "the node's disks for KV: `kvsim plan slo` refuses a disk budget beyond it; absent = not "
                   "checked"),
    OTHER("hardware.calibration", SIM_KEY_STRING,
          "calibration file (`kvsim calibrate`): data-path curves, and measured prefill/decode profile tables "
          "when it has them for the model and GPU count (docs/gpu-calibration.md); absent or \"\" = analytic",
          .optional = true),
    OTHER("hardware.optables", SIM_KEY_STRING,
          "folder of measured per-operation latency tables for this GPU (`configs/optables/SYSTEM/`, "
          "docs/measured.md): what `cost.compute = measured` prices an iteration from; absent or \"\" = none",
          .optional = true),
    ROW("hardware.optables_transfer", SIM_KEY_BOOL, "", 0, 0, .optional = true,
        .meaning = "true: `hardware.optables` were measured on another GPU; each operation is scaled by the "
                   "ratio of its roofline on this hardware (`hbm_GBps_per_gpu`, `tflops_per_gpu`, "
                   "`nvlink_GBps_per_gpu`) to that on the tables' GPU (docs/hardware.md §6); absent = false"),
    OTHER("hardware.allreduce_optables", SIM_KEY_STRING,
          "folder of measured tables whose all-reduce rows price this GPU's all-reduces in place of "
          "`hardware.optables`' own: another GPU of the same NVLink and NVSwitch, whose rows match public "
          "measurements of the path vLLM takes (the h200 presets take the H100's, docs/measured.md §1); absent or "
          "\"\" = `hardware.optables`",
          .optional = true),
    CHOICE("cluster.mode", "",
           "serving model (`kvsim policies`): `disaggregated` = Mooncake's prefill/decode split; `aggregated` = "
           "instances that prefill and decode"),
    OTHER("cluster.prefill_hardware", SIM_KEY_STRING,
          "disaggregated: the prefill nodes' hardware preset (`configs/hardware/`, or a path); \"\" = `hardware` "
          "(docs/hardware.md)"),
    OTHER("cluster.decode_hardware", SIM_KEY_STRING,
          "disaggregated: the decode nodes' hardware preset (e.g. `h20x8`: HBM-rich); \"\" = `hardware`"),
    INT("cluster.gpus_per_instance", "GPUs", 0, 1 << 16,
        "GPUs of one instance: 0 = a whole node; a divisor of `hardware.gpus_per_node` = tensor parallel within a "
        "node, a multiple = pipeline parallel across nodes (docs/hardware.md)"),
    INT("cluster.prefill", "instances", 1, 4096, "prefill instances (one instance = one node)"),
    INT("cluster.decode", "instances", 1, 4096, "decode instances"),
    INT("cluster.instances", "instances", 0, 8192, "aggregated instances (0 = `cluster.prefill` + `cluster.decode`)"),
    INT("cluster.instances_per_node", "instances", 1, 1024,
        "aggregated instances sharing a node's CPU pool (`kvstore.cpu_scope` = `node`)"),
    CHOICE("cluster.scope", "global|local",
           "`global`: any node's blocks serve any prefill node over the NIC (Mooncake Store); `local`: each node "
           "sees only its own cache"),
    INT("cluster.prefill_chunk", "tokens", 16, 1 << 24, "chunked prefill above this many uncached tokens"),
    BOOL("cluster.layerwise", "layer-wise overlap of KV load/stream with prefill compute"),
    INT("cluster.decode_max_batch", "requests", 1, 1 << 20, "largest decode batch"),
    CHOICE("decode.kv_allocation", "incremental|reserve",
           "decode HBM for a request's KV: `incremental` = allocated when its KV arrives and grown a token per step, "
           "preempting when full (vLLM, docs/definitions.md); `reserve` = input + output reserved whole at admission"),
    CHOICE("decode.preemption", "recompute|swap",
           "a preempted decode request (`decode.kv_allocation` = `incremental`): `recompute` = its KV is dropped "
           "and recomputed on resumption; `swap` = copied to the node's DRAM and back over the host link"),
    CHOICE("decode.kv_receive", "dram|hbm",
           "where a request's KV lands on its decode node: `dram` = the node's CPU memory, then loaded into HBM over "
           "the host link when it joins the batch (Mooncake §3.1 step 4, §7.4.3); `hbm` = straight into HBM "
           "(GPUDirect RDMA, §6.1)"),
    POS("cluster.decode_hbm_frac", "", 1, "fraction of HBM usable (weights + KV) on a decode instance"),
    NUM("cluster.switch_ms", "ms", 0, 1e9, "cost of a PD role switch after the instance drained"),
    INT("cluster.cpp_group", "nodes", 1, 4096,
        "chunked pipeline parallelism: prefill nodes per pipeline group (1 = off)"),
    INT("cluster.cpp_threshold", "tokens", 0, 1 << 30, "uncached tokens above which a request uses its group"),
    CHOICE("cluster.on_failure", "retry|lose",
           "a failed instance's in-flight requests restart (`retry`) or are counted lost (`lose`)"),
    INT("kvstore.block_tokens", "tokens", 1, 1 << 20, "tokens per cache block (must equal `trace.block_tokens`)"),
    CHOICE("kvstore.pic", "",
           "cache model (`kvsim policies`): `none` = prefix reuse of hash_id blocks; `prefix`, `epic`, "
           "`cacheblend`, `mepic` = position-independent caching of segment traces in each instance's HBM"),
    INT("kvstore.pic_block_tokens", "tokens", 1, 1 << 20,
        "HBM block (vLLM page) of the PIC accounting; must divide `trace.block_tokens`"),
    NUM("kvstore.pic_cacheblend_ratio", "", 0, 1, "share of a reused chunk's tokens CacheBlend recomputes"),
    INT("kvstore.pic_epic_tokens", "tokens", 0, 1 << 20, "leading tokens of a reused chunk EPIC recomputes"),
    CHOICE("kvstore.eviction", "", "eviction policy of every tier (`kvsim policies`)"),
    SIZE("kvstore.hbm_bytes",
         "per-node HBM prefix-cache budget (0 = tier absent); under a PIC policy each instance's HBM KV store "
         "(0 = the HBM left after weights × `cluster.decode_hbm_frac`)"),
    SIZE("kvstore.dram_bytes", "per-node DRAM prefix-cache budget (0 = tier absent)"),
    SIZE("kvstore.ssd_bytes", "per-node SSD prefix-cache budget (0 = tier absent)"),
    BOOL("kvstore.promote", "a read from SSD promotes the block to DRAM"),
    BOOL("kvstore.lmcache",
         "the LMCache layer of aggregated instances (CPU `dram_bytes`, disk `ssd_bytes`, remote store)"),
    INT("kvstore.chunk_tokens", "tokens", 1, 1 << 20,
        "LMCache chunk; a multiple of the page, dividing or divided by `trace.block_tokens`"),
    CHOICE("kvstore.cpu_scope", "instance|node",
           "`instance`: a CPU pool per instance; `node`: one per `cluster.instances_per_node` instances"),
    CHOICE("kvstore.transfer", "chunk|page",
           "`chunk`: one transfer per chunk (LMCache); `page`: one per layer's 16-token page (vLLM native "
           "offload)"),
    CHOICE("kvstore.load", "always|never|adaptive|balanced",
           "load cached chunks always, never, `adaptive`: per chunk, when its transfer beats its recompute "
           "(charged to the request and to each co-running one); `balanced`: per request, load part while "
           "recomputing the rest, the split minimising TTFT plus co-runners' delay (docs/lmcache-load.md)"),
    BOOL("kvstore.prefetch", "copy a queued request's disk/remote chunks into CPU memory while it waits"),
    SIZE("kvstore.remote.bytes", "the cluster's remote KV store (0 = none)"),
    NUM("kvstore.remote.Gbps", "Gbit/s", 1e-3, 1e6, "the remote store's link"),
    NUM("kvstore.remote.latency_us", "µs", 0, 1e9, "the remote store's per-transfer latency"),
    INT("engine.max_num_batched_tokens", "tokens", 1, 1 << 24,
        "an aggregated iteration's token budget (decodes + prefill chunks); at least one page"),
    BOOL("engine.async_scheduling",
         "aggregated instances schedule step N+1 while step N runs (vLLM's async scheduling, the default since "
         "v0.14.0, vllm-project/vllm#27614): a request that arrives during a step joins the step after the next"),
    BOOL("engine.chunked_prefill",
         "aggregated instances split a prompt across steps to fill the token budget (vLLM's "
         "--enable-chunked-prefill); false: a prompt is prefilled whole in one step, waiting for one with room "
         "(and the queue behind it with it), "
         "and a prompt longer than `engine.max_num_batched_tokens` is rejected (vLLM then requires "
         "max_model_len ≤ max_num_batched_tokens)"),
    BOOL("engine.prefix_caching",
         "aggregated instances reuse the KV blocks of a prompt prefix seen before (vLLM's "
         "--enable-prefix-caching); false: every request's blocks are its own, computed in full"),
    NUM("engine.iter_overhead_ms", "ms", 0, 1e6,
        "cost.compute = engine: CPU time per iteration (scheduling, input preparation, sampling launch); fitted "
        "on vLLM runs (docs/validation.md)"),
    NUM("engine.seq_overhead_ms", "ms", 0, 1e6,
        "cost.compute = engine: CPU time per scheduled sequence per iteration (sampling, detokenizing, "
        "streaming); fitted on vLLM runs"),
    NUM("engine.frontend_ms", "ms", 0, 1e6,
        "cost.compute = engine: the API server's latency per request (tokenizing, queueing into the engine, "
        "first-token streaming), added before a request reaches the scheduler; fitted on vLLM runs"),
    NUM("engine.measured.iter_overhead_ms", "ms", 0, 1e6,
        "cost.compute = measured: CPU time per iteration beside the measured GPU operations; fitted on vLLM runs "
        "(docs/measured.md)"),
    NUM("engine.measured.seq_overhead_ms", "ms", 0, 1e6,
        "cost.compute = measured: CPU time per scheduled sequence per iteration; fitted on vLLM runs"),
    NUM("engine.measured.frontend_ms", "ms", 0, 1e6,
        "cost.compute = measured: the API server's latency per request; fitted on vLLM runs"),
    INT("engine.measured.cuda_graph_max_tokens", "tokens", 0, 1 << 20,
        "cost.compute = measured: passes of at most this many tokens run as a captured CUDA graph (vLLM's "
        "max_cudagraph_capture_size); 0 = vLLM's default, min(2 × max_num_seqs, 512, max_num_batched_tokens)"),
    NUM("engine.measured.moe_jit_compile_ms", "ms", 0, 1e6,
        "cost.compute = measured, a mixture of experts on an aggregated instance: the stall while Triton compiles "
        "one fused-MoE kernel variant the first time a pass above the CUDA-graph limit needs it (docs/measured.md "
        "§4; the default is the median of 60 compiles timed on a lent H200 host); 0 = a warm kernel cache"),
    OFF_OR("engine.measured.glitch_ratio", "", 1.1, 1e6,
           "cost.compute = measured: a measured point more than this many times above both of its neighbours on its "
           "curve, or below both, is a glitch of the collection and dropped: lookups are priced between its "
           "neighbours, and a run that prices across one says so (docs/measured.md §2); 0 = every point as measured"),
    CHOICE("engine.measured.moe_distribution", "balanced|power_law_1.01|power_law_1.2",
           "cost.compute = measured: how tokens spread over experts where the fused-MoE table is read "
           "(AIConfigurator's measured distributions; its default and the only ones every bundled system has: "
           "power_law_1.2)"),
    CHOICE("policy.router", "",
           "prefill router: `random`, `round_robin`, `least_loaded`, `cache_aware_local`, `kvcentric`"),
    CHOICE("policy.decode", "", "decode selector (`kvsim policies`)"),
    CHOICE("policy.admission", "", "`none`, `slo_reject`, `baseline`, `early_reject`, `early_reject_predict`"),
    CHOICE("policy.pd_controller", "", "`static`, `dynamic`"),
    OTHER("policy.params", SIM_KEY_OBJECT,
          "policy parameters, by name (`kvsim policies`); a name no registered policy declares is an error"),
    POS("slo.ttft_ms", "ms", 1e9, "TTFT SLO; a trace line's `slo_ttft_ms` overrides it per request"),
    POS("slo.tbt_ms", "ms", 1e9, "TBT SLO; a trace line's `slo_tbt_ms` overrides it per request"),
    OTHER("trace.path", SIM_KEY_STRING, "trace to replay"),
    NUM("trace.speed", "", 1e-6, 1e6, "replay speed factor (2 = twice as dense, as Mooncake §7.6 does for overload)"),
    POS("trace.sample", "", 1, "keep each request with this probability (seeded)"),
    INT("trace.limit", "requests", 0, 9e15, "stop after this many requests (0 = all)"),
    BOOL("trace.skip_bad", "skip bad lines (counted in the summary) instead of stopping"),
    BOOL("trace.sort", "sort unsorted timestamps instead of stopping"),
    INT("trace.block_tokens", "tokens", 1, 1 << 20, "tokens per trace hash block"),
    CHOICE("trace.replay", "open|closed",
           "`open`: every request arrives at its recorded time; `closed`: a session's later turn arrives its "
           "`think_ms` (else the recorded gap) after the turn before it finishes (docs/trace.md)"),
    CHOICE("trace.resample", "none|poisson|sessions",
           "what the seed redraws of the workload, so that seeds cover its variability (docs/trace.md): `none`; "
           "`poisson` = session starts as a Poisson process at the trace's rate, each session's turns and think "
           "times kept; `sessions` = sessions bootstrapped into the trace's start times"),
    NUM("cost.prefill_mfu", "", 1e-3, 1, "model FLOPs utilization of prefill (and decode compute)"),
    CHOICE("cost.compute", "auto|analytic|profile|engine|measured",
           "compute-time model: `analytic` (Mooncake Eq. 1 and the HBM roofline), `profile` (the hardware "
           "calibration's measured tables), `engine` (a production engine with CUDA graphs: roofline over the "
           "bytes a pass reads + `engine.*` overheads, docs/validation.md), `auto` (`measured` where the hardware "
           "names tables that price the model; else engine for aggregated instances, profile where the calibration "
           "has the model, analytic otherwise), `measured` (the sum over layers of measured "
           "per-operation latencies, `hardware.optables`, plus the `engine.*` CPU overheads; docs/measured.md)"),
    BOOL("cost.expert_parallel",
         "mixture of experts: the routed experts are split across the instance's GPUs, exchanged by a dispatch and "
         "a combine all-to-all per MoE layer (DeepSpeed-MoE); false = every expert tensor parallel (vLLM's "
         "default; docs/hardware.md)"),
    NUM("cost.expert_imbalance", "", 1, 1e3,
        "mixture of experts under `cost.expert_parallel`: the busiest GPU's routed tokens over the mean (1 = "
        "balanced)"),
    NUM("cost.decode_overhead_ms", "ms", 0, 1e6, "fixed cost per decode iteration (analytic and profile)"),
    NUM("cost.prefill_chunk_overhead_ms", "ms", 0, 1e6, "fixed cost per prefill chunk when chunked"),
    NUM("cost.transfer_latency_us", "µs", 0, 1e9, "per-transfer latency of H2D/D2H and NIC transfers"),
    NUM("cost.noise", "", 0, 1, "relative Gaussian noise on true prefill and decode times"),
    NUM("cost.estimator_noise", "", 0, 1, "relative error of the conductor's profiling samples"),
    INT("cost.estimator_samples", "", 8, 1 << 20, "profiling samples the prefill estimator is fitted on"),
    BOOL("metrics.request_rows",
         "one `requests` row per request in `--db`; false keeps only the run's summary (large sweeps)"),
    BOOL("metrics.sample_rows", "`samples` and `replicas` rows in `--db`; false drops them"),
    CHOICE("metrics.first_token", "prefill|decode",
           "disaggregated: the user's first token is the prefill instance's (`prefill`, Mooncake §3) or the decode "
           "instance's first (`decode`, vLLM's and SGLang's P/D proxies: the KV transfer and load then count in "
           "TTFT, not in the first TBT interval; docs/definitions.md \"First token\")"),
    NUM("metrics.sample_period_ms", "ms", 1, 1e10, "period of the control plane's load samples"),
    NUM("metrics.sample_rows_per_s", "rows/s", 0, 1e6,
        "at most this many `samples` rows per simulated second: larger clusters record every ⌈instances / "
        "(period × this)⌉ periods (0 = every period)"),
    OFF_OR("metrics.replica_period_ms", "ms", 1, 1e10,
           "period of the `replicas` table; 0 = off (Mooncake Fig. 18 sampled every 30000)"),
    OFF_OR("limits.event_budget", "per unit", 1, 1e9,
           "a run stops (exit 2, naming the cause) past 10⁶ + this × (requests + output tokens read) events or "
           "`--db` rows: cost follows work, never simulated time alone; 0 = no limit"),
    OTHER("faults", SIM_KEY_ARRAY,
          "scheduled failures: `[{\"at_ms\": 300000, \"instance\": 2, \"down_ms\": 120000}, ...]` (simulated "
          "clock; instances 0..P−1 prefill, then decode)"),
    INT("seed", "", 0, 9e15, "seed of every random stream"),
};

size_t sim_config_key_count(void) { return sizeof keys / sizeof keys[0]; }

const sim_config_key *sim_config_key_at(size_t i) { return i < sim_config_key_count() ? &keys[i] : NULL; }

const sim_config_key *sim_config_key_find(const char *path)
{
    for (size_t i = 0; i < sim_config_key_count(); i++)
        if (!strcmp(keys[i].path, path)) return &keys[i];
    return NULL;
}

const json_t *sim_config_path_get(const json_t *root, const char *path)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    const json_t *node = root;
    for (char *save, *tok = strtok_r(buf, ".", &save); tok && node; tok = strtok_r(NULL, ".", &save))
        node = json_is_object(node) ? json_object_get(node, tok) : NULL;
    return node;
}

const char *sim_config_key_type_name(sim_key_type t)
{
    static const char *const names[] = {
        [SIM_KEY_NUMBER] = "number", [SIM_KEY_INTEGER] = "integer", [SIM_KEY_SIZE] = "size",
        [SIM_KEY_BOOL] = "bool",     [SIM_KEY_STRING] = "string",   [SIM_KEY_CHOICE] = "name",
        [SIM_KEY_PRESET] = "preset", [SIM_KEY_OBJECT] = "object",   [SIM_KEY_ARRAY] = "array"};
    return names[t];
}

/* Integers as integers (1048576, not 1.04858e+06), the rest as %g; an
 * integer key's values every digit (9000000000000001, not 9e+15: %g would
 * print a value just past a bound as the bound). Integer bounds stay below
 * 2^53, so every accepted value is exact in a double. */
static const char *num_text(const sim_config_key *k, double v, char *buf, size_t n)
{
    bool exact = k->type == SIM_KEY_INTEGER ? fabs(v) < 1e19 : fabs(v) < 1e10;
    if (v == floor(v) && exact) snprintf(buf, n, "%.0f", v);
    else snprintf(buf, n, "%g", v);
    return buf;
}

void sim_config_key_range(const sim_config_key *k, char *buf, size_t n)
{
    char lo[32], hi[32];
    switch (k->type) {
    case SIM_KEY_NUMBER:
    case SIM_KEY_INTEGER:
    case SIM_KEY_SIZE:
        snprintf(buf, n, "%s%s%s, %s]%s", k->zero_ok ? "0 or " : "", k->lo_open ? "(" : "[",
                 num_text(k, k->lo, lo, sizeof lo), num_text(k, k->hi, hi, sizeof hi), k->inf_ok ? " or inf" : "");
        return;
    case SIM_KEY_BOOL: snprintf(buf, n, "true, false"); return;
    case SIM_KEY_CHOICE:
        if (!k->choices || !*k->choices) {
            snprintf(buf, n, "see `kvsim policies`");
            return;
        }
        snprintf(buf, n, "%s", k->choices);
        for (char *bar; (bar = strchr(buf, '|'));) { /* "a|b" → "a, b" (needs n > strlen + bars) */
            memmove(bar + 2, bar + 1, strlen(bar + 1) + 1);
            bar[0] = ',', bar[1] = ' ';
        }
        return;
    default: snprintf(buf, n, "%s", ""); return;
    }
}

static bool in_range(const sim_config_key *k, double v)
{
    if (k->inf_ok && isinf(v) && v > 0) return true;
    if (k->zero_ok && v == 0) return true;
    if (!(v <= k->hi)) return false; /* NaN too */
    return k->lo_open ? v > k->lo : v >= k->lo;
}

static int type_error(const sim_config_key *k, const json_t *v, sim_err *err)
{
    static const char *const what[] = {[SIM_KEY_NUMBER] = "a number",
                                       [SIM_KEY_INTEGER] = "an integer",
                                       [SIM_KEY_SIZE] = "a number of bytes or a size such as \"512GiB\"",
                                       [SIM_KEY_BOOL] = "true or false",
                                       [SIM_KEY_STRING] = "a string",
                                       [SIM_KEY_CHOICE] = "a name",
                                       [SIM_KEY_PRESET] = "a preset name or an object",
                                       [SIM_KEY_OBJECT] = "an object",
                                       [SIM_KEY_ARRAY] = "an array"};
    char *text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    int rc = sim_errf(err, "config key '%s': expected %s, got %.60s", k->path, what[k->type], text ? text : "?");
    free(text);
    return rc;
}

static int range_error(const sim_config_key *k, const json_t *json, double v, sim_err *err)
{
    char r[96], text[32];
    sim_config_key_range(k, r, sizeof r);
    if (k->type == SIM_KEY_INTEGER && json_is_integer(json))
        snprintf(text, sizeof text, "%" JSON_INTEGER_FORMAT, json_integer_value(json));
    else if (k->type == SIM_KEY_INTEGER) num_text(k, v, text, sizeof text);
    else snprintf(text, sizeof text, "%g", v);
    return sim_errf(err, "config key '%s': %s is out of range %s%s%s", k->path, text, r, *k->unit ? " " : "", k->unit);
}

/* A number-like key's value, or -1 after an error. */
static int number_of(const sim_config_key *k, const json_t *v, double *out, sim_err *err)
{
    if (k->type == SIM_KEY_SIZE && json_is_string(v)) return sim_parse_size(json_string_value(v), k->path, out, err);
    if (!json_is_number(v)) return type_error(k, v, err);
    *out = json_number_value(v);
    if (k->type == SIM_KEY_INTEGER && *out != floor(*out)) return type_error(k, v, err);
    return 0;
}

static int check_choice(const sim_config_key *k, const json_t *v, sim_err *err)
{
    if (!json_is_string(v)) return type_error(k, v, err);
    if (!k->choices || !*k->choices) return 0; /* a registry name: its reader checks it */
    const char *s = json_string_value(v), *names[16];
    char buf[256];
    size_t n = 0;
    snprintf(buf, sizeof buf, "%s", k->choices);
    for (char *save, *tok = strtok_r(buf, "|", &save); tok && n < 16; tok = strtok_r(NULL, "|", &save))
        if (!strcmp(names[n++] = tok, s)) return 0;
    char all[256];
    sim_config_key_range(k, all, sizeof all);
    return sim_errf(err, "config key '%s': '%s' is not one of %s%s", k->path, s, all, sim_did_you_mean(s, names, n));
}

static int check_key(const sim_config_key *k, const json_t *v, sim_err *err)
{
    double d = 0;
    switch (k->type) {
    case SIM_KEY_NUMBER:
    case SIM_KEY_INTEGER:
    case SIM_KEY_SIZE:
        if (number_of(k, v, &d, err)) return -1;
        return in_range(k, d) ? 0 : range_error(k, v, d, err);
    case SIM_KEY_BOOL: return json_is_boolean(v) ? 0 : type_error(k, v, err);
    case SIM_KEY_STRING: return json_is_string(v) ? 0 : type_error(k, v, err);
    case SIM_KEY_CHOICE: return check_choice(k, v, err);
    case SIM_KEY_PRESET:
    case SIM_KEY_OBJECT: return json_is_object(v) ? 0 : type_error(k, v, err);
    case SIM_KEY_ARRAY: return json_is_array(v) ? 0 : type_error(k, v, err);
    }
    return 0;
}

int sim_config_check_key(const sim_config_key *k, const json_t *v, sim_err *err) { return check_key(k, v, err); }

/* Every key of a preset object (model, hardware: free-form in the tree, so
 * not checked when merged) is a schema row: a misspelt field is an error
 * with the closest row, never silently ignored. */
static int check_preset_keys(const json_t *root, const char *section, sim_err *err)
{
    const char *key, *names[sizeof keys / sizeof keys[0]];
    const json_t *v;
    size_t n = 0, len = strlen(section);
    for (size_t i = 0; i < sim_config_key_count(); i++)
        if (!strncmp(keys[i].path, section, len) && keys[i].path[len] == '.') names[n++] = keys[i].path;
    json_object_foreach((json_t *)json_object_get(root, section), key, v)
    {
        char path[256];
        snprintf(path, sizeof path, "%s.%s", section, key);
        bool known = false;
        for (size_t i = 0; i < n && !known; i++) known = !strcmp(names[i], path);
        if (!known) return sim_errf(err, "config key '%s': unknown%s", path, sim_did_you_mean(path, names, n));
    }
    return 0;
}

int sim_config_check_preset_keys(const json_t *root, const char *section, sim_err *err)
{
    if (check_preset_keys(root, section, err)) return -1;
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)json_object_get(root, section), key, v)
    {
        char path[256];
        snprintf(path, sizeof path, "%s.%s", section, key);
        const sim_config_key *k = sim_config_key_find(path);
        if (k && check_key(k, v, err)) return -1;
    }
    return 0;
}

int sim_config_check_schema(const json_t *root, sim_err *err)
{
    if (check_preset_keys(root, "model", err) || check_preset_keys(root, "hardware", err)) return -1;
    for (size_t i = 0; i < sim_config_key_count(); i++) {
        const sim_config_key *k = &keys[i];
        const json_t *v = sim_config_path_get(root, k->path);
        if (!v) {
            if (k->optional) continue;
            return sim_errf(err, "config key '%s': missing", k->path);
        }
        if (check_key(k, v, err)) return -1;
    }
    return 0;
}
