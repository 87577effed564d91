/* SPDX-License-Identifier: Apache-2.0 */
/*
 * repcols.h — the names of the report tables and columns that the parser
 * writes and other parts read back: analyze (its tap and a profiler.db it
 * opens) and report (its charts' rows). One list, so that a column renamed
 * here is renamed for writer and readers at once; the compiler then names
 * every reader still using the old spelling.
 *
 * The writers (request.c, batch.c, forward.c, pdsplit.c, timeline.c,
 * moe_rank.c, eplb.c)
 * build their column lists from these names, in the order written here,
 * which is the order of the CSV and profiler.db columns. Readers find
 * columns by name (colmap.h), never by position, so a column added to a
 * report breaks no reader. A column no other part reads may be named here
 * as well, to keep each table's list whole.
 */
#ifndef SERVPROF_PARSE_REPCOLS_H
#define SERVPROF_PARSE_REPCOLS_H

/* Table keys (prs_table.key: profiler.db's table name, the tap's name). */
#define PRS_T_REQUEST     "request"
#define PRS_T_BATCH       "batch"
#define PRS_T_FORWARD     "forward"
#define PRS_T_PD_COMM     "pd_split_communication"
#define PRS_T_PD_KV       "pd_split_kvcache"
#define PRS_T_COORDINATOR "coordinator"
#define PRS_T_COUNTER     "counter"
#define PRS_T_MOE_RANK    "moe_rank"
#define PRS_T_EXPERT_LOAD "expert_load"
#define PRS_T_EPLB        "eplb_balance"

/* request (request.c), in column order */
#define PRS_RQ_HTTP_RID      "http_rid"
#define PRS_RQ_START_DT      "start_datetime"
#define PRS_RQ_RECV_TOKENS   "recv_token_size"
#define PRS_RQ_REPLY_TOKENS  "reply_token_size"
#define PRS_RQ_EXEC_MS       "execution_time(ms)"
#define PRS_RQ_QUEUE_MS      "queue_wait_time(ms)"
#define PRS_RQ_TTFT_MS       "first_token_latency(ms)"
#define PRS_RQ_CACHE_HIT     "cache_hit_rate"
#define PRS_RQ_START_MS      "start_time(ms)"
#define PRS_RQ_TPOT_MS       "tpot(ms)"
#define PRS_RQ_PREFILL_MS    "prefill_time(ms)"
#define PRS_RQ_DECODE_MS     "decode_time(ms)"
#define PRS_RQ_PREEMPTED     "preempted"
#define PRS_RQ_COMPLETE      "complete"

/* batch (batch.c), in column order */
#define PRS_BT_NAME          "name"
#define PRS_BT_RES_LIST      "res_list"
#define PRS_BT_START_DT      "start_datetime"
#define PRS_BT_END_DT        "end_datetime"
#define PRS_BT_DUR_MS        "during_time(ms)"
#define PRS_BT_TYPE          "batch_type"
#define PRS_BT_PROF_ID       "prof_id"
#define PRS_BT_SIZE          "batch_size"
#define PRS_BT_TOTAL_BLOCKS  "total_blocks"
#define PRS_BT_USED_BLOCKS   "used_blocks"
#define PRS_BT_FREE_BLOCKS   "free_blocks"
#define PRS_BT_ALLOCATED     "blocks_allocated"
#define PRS_BT_FREED         "blocks_freed"
#define PRS_BT_KV_USAGE      "kvcache_usage_rate"
#define PRS_BT_PREFILL_SIZE  "prefill_batch_size"
#define PRS_BT_DECODE_SIZE   "decode_batch_size"
#define PRS_BT_PREFILL_TOK   "prefill_scheduled_tokens"
#define PRS_BT_DECODE_TOK    "decode_scheduled_tokens"
#define PRS_BT_TOTAL_TOK     "total_scheduled_tokens"
#define PRS_BT_DP_RANK       "dp_rank"
#define PRS_BT_START_MS      "start_time(ms)"
#define PRS_BT_END_MS        "end_time(ms)"
#define PRS_BT_ACCEPTED      "accepted_ratio"
#define PRS_BT_ACCEPTED_POS  "accepted_ratio_per_pos"

/* forward (forward.c), in column order. The columns of a step that
 * batch and forward share have the same names: a reader of both tables
 * may use batch's (PRS_BT_*) for both. */
#define PRS_FW_NAME          "name"
#define PRS_FW_REL_MS        "relative_start_time(ms)"
#define PRS_FW_START_DT      "start_datetime"
#define PRS_FW_END_DT        "end_datetime"
#define PRS_FW_DUR_MS        "during_time(ms)"
#define PRS_FW_BUBBLE_MS     "bubble_time(ms)"
#define PRS_FW_SIZE          "batch_size"
#define PRS_FW_TYPE          "batch_type"
#define PRS_FW_ITER          "forward_iter"
#define PRS_FW_DP_RANK       "dp_rank"
#define PRS_FW_PROF_ID       "prof_id"
#define PRS_FW_HOSTNAME      "hostname"
#define PRS_FW_START_MS      "start_time(ms)"
#define PRS_FW_END_MS        "end_time(ms)"

/* pd_split_communication (pdsplit.c), in column order */
#define PRS_PC_RID           "rid"
#define PRS_PC_REQ_MS        "http_req_time(ms)"
#define PRS_PC_SEND_MS       "send_request_time(ms)"
#define PRS_PC_SUCC_MS       "send_request_succ_time(ms)"
#define PRS_PC_PREFILL_RES_MS "prefill_res_time(ms)"
#define PRS_PC_END_MS        "request_end_time(ms)"
#define PRS_PC_PREFILL_MS    "prefill_time(ms)"
#define PRS_PC_SEND_DUR_MS   "send_time(ms)"
#define PRS_PC_KV_MS         "kv_transfer_time(ms)"
#define PRS_PC_FIRST_DEC_MS  "first_decode_time(ms)"
#define PRS_PC_TTFT_MS       "ttft(ms)"
#define PRS_PC_SHARE         "handoff_share"

/* pd_split_kvcache (pdsplit.c), in column order */
#define PRS_PK_DOMAIN        "domain"
#define PRS_PK_RANK          "rank"
#define PRS_PK_RID           "rid"
#define PRS_PK_BLOCKS        "block_tables"
#define PRS_PK_SEQ_LEN       "batch_seq_len"
#define PRS_PK_DUR_MS        "during_time(ms)"
#define PRS_PK_START_DT      "start_datetime"
#define PRS_PK_END_DT        "end_datetime"
#define PRS_PK_START_MS      "start_time(ms)"
#define PRS_PK_END_MS        "end_time(ms)"
#define PRS_PK_BYTES         "kv_bytes"
#define PRS_PK_RATE          "transfer_rate(MB/s)"

/* coordinator (pdsplit.c), in column order */
#define PRS_CO_RID           "rid"
#define PRS_CO_ADDRESS       "address"
#define PRS_CO_START_DT      "start_datetime"
#define PRS_CO_PREFILL_START "prefillStart"
#define PRS_CO_DECODE_START  "decodeStart"
#define PRS_CO_PREFILL_END   "prefillEnd"
#define PRS_CO_DECODE_END    "decodeEnd"

/* moe_rank (moe_rank.c), in column order */
#define PRS_MR_STEP          "step"
#define PRS_MR_LAYER         "layer"
#define PRS_MR_RANK          "rank"
#define PRS_MR_START_MS      "start_time(ms)"
#define PRS_MR_DISPATCH_MS   "dispatch(ms)"
#define PRS_MR_COMPUTE_MS    "expert_compute(ms)"
#define PRS_MR_COMBINE_MS    "combine(ms)"
#define PRS_MR_WAIT_MS       "combine_wait(ms)"
#define PRS_MR_TOKENS        "tokens"

/* expert_load (eplb.c), in column order */
#define PRS_EL_STEP          "step"
#define PRS_EL_LAYER         "layer"
#define PRS_EL_EXPERT        "expert"
#define PRS_EL_RANK          "rank"
#define PRS_EL_TOKENS        "tokens"

/* eplb_balance (eplb.c), in column order */
#define PRS_EB_STEP          "step"
#define PRS_EB_START_MS      "start_time(ms)"
#define PRS_EB_LAYERS        "layers"
#define PRS_EB_RATIO         "balance_ratio"
#define PRS_EB_LOAD_RATIO    "max_mean_load"
#define PRS_EB_HOT           "hot_expert"
#define PRS_EB_HOT_SHARE     "hot_expert_share"
#define PRS_EB_SLOWEST       "slowest_rank"
#define PRS_EB_MAX_MS        "max_rank_compute(ms)"
#define PRS_EB_MEAN_MS       "mean_rank_compute(ms)"
#define PRS_EB_WAIT_MS       "mean_combine_wait(ms)"

/* counter (timeline.c): profiler.db's counter rows, and the tap's with
 * tap_counters; in column order */
#define PRS_CT_ID            "id"
#define PRS_CT_NAME          "name"
#define PRS_CT_PID           "pid"
#define PRS_CT_TIMESTAMP     "timestamp"
#define PRS_CT_SERIES        "series"
#define PRS_CT_VALUE         "value"

#endif
