/* SPDX-License-Identifier: Apache-2.0 */
/*
 * reports.c — the table of reports that drives the model (model.c).
 *
 * Adding a report
 * ---------------
 * A report is one file that owns its state and one line below. The file
 * (say spec_decode.c) keeps everything it needs in a struct of its own,
 * opaque to every other file, and defines its row:
 *
 *     const prs_report prs_report_spec_decode = {
 *         .name = "spec_decode",
 *         .kinds = PRS_KIND(K_SPEC) | PRS_KIND(K_EXEC),
 *         .open = sd_open, .record = sd_record, .finish = sd_finish,
 *         .close = sd_close, .free = sd_free,
 *     };
 *
 * open() allocates the state, creates its tables (prs_table_init on
 * &m->out) and returns the state, or NULL when the report is off for this
 * run (then no other hook is called); record() is handed only the record
 * kinds named in .kinds (PRS_ALL_KINDS: every record), after the model has
 * decoded the args (m->args) and resolved the requests (m->roots); every
 * other hook is optional (NULL: nothing to do). The hooks and their order
 * are in model.h (prs_report). Then one line in PRS_REPORTS below, and
 * its test.
 *
 * The order of the list is the order of every hook: open (so profiler.db's
 * tables are created in this order: a report added at the end changes no
 * earlier table), record (for the kinds a report takes), finish and close.
 * Add a report at the end unless it must come before another; a report
 * that uses another's results (kvcache.c hands KVCacheStatus to batch.c;
 * forward.c asks batch.c for a step's type) finds that report's state in
 * its open with prs_model_state(), so it must come after it.
 */
#include "model.h"

/* name          file          what it writes
 * request       request.c     request.csv (rows in start order: reqorder.c)
 * batch         batch.c       batch.csv
 * forward       forward.c     forward.csv
 * kvcache       kvcache.c     kvcache.csv
 * reqstatus     reqstatus.c   request_status.csv
 * spaninfo      spaninfo.c    span_info/NAME.csv (with --span)
 * topreq        topreq.c      (no file) the summary's top five requests by forward + bubble,
 *                             printed under spaninfo's span table
 * pdsplit       pdsplit.c     pd_split_communication.csv, pd_split_kvcache.csv,
 *                             coordinator.csv, coordinator_running.csv
 * moe           moeset.c      ep_balance.csv, moe_analysis.csv, moe_rank.csv,
 *                             expert_load.csv, eplb_balance.csv (one file each:
 *                             ep_balance.c, moe_analysis.c, moe_rank.c, eplb.c)
 * specdec       specdecode.c  spec_decode.csv (specDecoding steps, per request)
 * batchexec     batchexec.c   profiler.db's batch_exec and batch_req (db only) */
#define PRS_REPORTS(X) \
    X(request)         \
    X(batch)           \
    X(forward)         \
    X(kvcache)         \
    X(reqstatus)       \
    X(spaninfo)        \
    X(topreq)          \
    X(pdsplit)         \
    X(moe)             \
    X(specdec)         \
    X(batchexec)

#define DECLARE(name) extern const prs_report prs_report_##name;
PRS_REPORTS(DECLARE)
#undef DECLARE

#define ROW(name) &prs_report_##name,
const prs_report *const prs_reports[] = {PRS_REPORTS(ROW)};
#undef ROW

const int prs_nreports = (int)(sizeof prs_reports / sizeof *prs_reports);
