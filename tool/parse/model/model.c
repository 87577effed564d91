/* SPDX-License-Identifier: Apache-2.0 */
/*
 * model.c — hands each record, in time order, to the reports.
 *
 * Per record: classify by name (docs/vocabulary.md), decode args once, resolve
 * the request ids it names (Link rows first merge two ids into one request),
 * then hand it to the reports that take its kind. The reports are a table
 * (reports.c): each owns its state, opaque here, and is driven through its
 * row's hooks (model.h, prs_report); at open the model builds, per record
 * kind, the list of record hooks that take it, so a record costs a call
 * per report that wants it and nothing for the others. Reports that must
 * look ahead (KV state after a step, the next forward) hold a few rows per
 * process, so memory stays bounded by what is in flight.
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "readers.h"
#include "tap.h"
#include "timeline.h"
#include "xalloc.h"

/* Record names and what they are (docs/vocabulary.md), one row per first
 * letter: a lookup compares the few names that share the record's first
 * byte. Names are compared whole and case-sensitively. To add one: an
 * entry in the row of its first letter (a row longer than KIND_ROW_MAX or
 * given twice is a compiler warning), and the same pair in
 * test_parse_keys.c's list, whose walk of this table fails until both
 * agree. */
typedef struct kind_name { const char *name; enum prs_kind kind; } kind_name;

enum { KIND_ROW_MAX = 4 };
#define ROW(c) [(c) - 'A']

static const kind_name kinds['z' - 'A' + 1][KIND_ROW_MAX] = {
    ROW('A') = {{"Allocate", K_KVEVENT}, {"AppendSlot", K_KVEVENT}},
    ROW('B') = {{"BatchSchedule", K_BATCH}},
    ROW('C') = {{"CacheHitRate", K_CACHEHIT}, {"CpuUsage", K_CPU}},
    ROW('D') = {{"Dequeue", K_DEQUEUE}, {"DecodeEnd", K_END}, {"DeviceMemory", K_DEVMEM}},
    ROW('E') = {{"Enqueue", K_ENQUEUE}, {"Execute", K_EXEC}},
    ROW('F') = {{"Free", K_KVEVENT}},
    ROW('G') = {{"GenerateToken", K_COORD}},
    ROW('K') = {{"KVCacheStatus", K_KVSTATUS}},
    ROW('L') = {{"Link", K_LINK}},
    ROW('M') = {{"MemUsage", K_MEM}},
    ROW('P') = {{"ProcessUsage", K_PROC}, {"PullKVCache", K_PULLKV}},
    ROW('Q') = {{"Queue", K_QUEUE}},
    ROW('R') = {{"RequestDispatch", K_COORD}, {"ReqFinish", K_COORD}},
    ROW('b') = {{"batchFrameworkProcessing", K_BATCH}},
    ROW('d') = {{"detokenize", K_TOKEN_OUT}, {"decode", K_TOKEN_OUT}, {"decodeRes", K_COMM}},
    ROW('f') = {{"forward", K_FORWARD}},
    ROW('h') = {{"httpReq", K_HTTPREQ}, {"httpRes", K_END}},
    ROW('m') = {{"modelExec", K_EXEC}, {"modelRunnerExec", K_EXEC}},
    ROW('p') = {{"prefillRes", K_COMM}},
    ROW('r') = {{"receiveReq", K_COMM}},
    ROW('s') = {{"sendResponse", K_SENDRESP}, {"specDecoding", K_SPEC}, {"sendReqToD", K_COMM},
                {"sendReqToDSucc", K_COMM}},
    ROW('t') = {{"tokenize", K_TOKENIZE}},
};

enum prs_kind prs_kind_of(const char *name, const prs_args *a)
{
    unsigned row = (unsigned)(unsigned char)name[0] - 'A';
    if (row < sizeof kinds / sizeof *kinds)
        for (const kind_name *e = kinds[row]; e < kinds[row] + KIND_ROW_MAX && e->name; e++)
            if (!strcmp(name, e->name))
                return e->kind;
    /* a record whose args are a link's (type 3, from, to) is one, whatever its name */
    if (a && a->type == 3 && a->from.p && a->to.p)
        return K_LINK;
    return K_OTHER;
}

const char *prs_kind_name(int i, enum prs_kind *kind)
{
    for (size_t r = 0; r < sizeof kinds / sizeof *kinds; r++)
        for (int c = 0; c < KIND_ROW_MAX && kinds[r][c].name; c++)
            if (i-- == 0) {
                *kind = kinds[r][c].kind;
                return kinds[r][c].name;
            }
    return NULL;
}

static int node_of(prs_model *m, prs_str s)
{
    return prs_ids_get_str(m->ids, s);
}

static void push_root(prs_model *m, int root)
{
    if (m->nroots == m->caproots) {
        m->caproots = m->caproots ? m->caproots * 2 : 64;
        m->roots = prs_xrealloc(m->roots, (size_t)m->caproots * sizeof *m->roots);
    }
    m->roots[m->nroots++] = root;
}

/* Fills m->roots with the request roots the record names, in list order.
 * A long rid list whose decode came from the cache (decode_args) reuses
 * the id nodes found the first time: interning 32 ids costs more than the
 * rest of the record. */
static void resolve(prs_model *m)
{
    prs_args *a = &m->args;
    m->nroots = 0;
    if (a->rid_kind == 1) {
        push_root(m, prs_ids_root(m->ids, node_of(m, a->rid)));
        return;
    }
    if (a->rid_kind != 2)
        return;
    if (m->args_swapped && m->cache_nodes_valid) {
        assert(m->ncache_nodes == a->nrids);
        for (int i = 0; i < a->nrids; i++)
            push_root(m, prs_ids_root(m->ids, m->cache_nodes[i]));
        return;
    }
    int keep = m->args_swapped; /* `args` is the cached decode: remember its nodes */
    if (keep && a->nrids > m->capcache_nodes) {
        m->capcache_nodes = a->nrids * 2;
        m->cache_nodes = prs_xrealloc(m->cache_nodes, (size_t)m->capcache_nodes * sizeof *m->cache_nodes);
    }
    for (int i = 0; i < a->nrids; i++) {
        int node = node_of(m, a->rids[i].rid);
        if (keep)
            m->cache_nodes[i] = node;
        push_root(m, prs_ids_root(m->ids, node));
    }
    if (keep) {
        m->ncache_nodes = a->nrids;
        m->cache_nodes_valid = 1;
    }
}

/* An id (an engine id, usually) linked from two process stores: ids must be
 * unique across the processes of a run (docs/parse.md, Ids), and such
 * requests merge into one. Counted, the first named, for the summary. */
static void note_link_store(prs_model *m, int from, int to, const prs_store *s)
{
    if (from < 0)
        return;
    if (from >= m->cap_link_store) {
        int cap = m->cap_link_store ? m->cap_link_store : 256;
        while (cap <= from)
            cap *= 2;
        const prs_store **n = realloc(m->link_store, (size_t)cap * sizeof *n);
        if (!n)
            return; /* not noticed: the link itself goes on */
        memset(n + m->cap_link_store, 0, (size_t)(cap - m->cap_link_store) * sizeof *n);
        m->link_store = n;
        m->cap_link_store = cap;
    }
    const prs_store *first = m->link_store[from];
    if (!first) {
        m->link_store[from] = s;
        return;
    }
    if (first == s || prs_ids_root(m->ids, from) == prs_ids_root(m->ids, to))
        return;
    if (!m->dup_links++)
        snprintf(m->dup_example, sizeof m->dup_example, "\"%.*s\" in %s and %s",
                 prs_ids_name_len(m->ids, from) > 64 ? 64 : prs_ids_name_len(m->ids, from),
                 prs_ids_name(m->ids, from), first->prof_id, s->prof_id);
}

static void apply_link(prs_model *m, const prs_store *s)
{
    int from = node_of(m, m->args.from), to = node_of(m, m->args.to);
    note_link_store(m, from, to, s);
    int absorbed;
    int kept = prs_ids_link(m->ids, from, to, &absorbed);
    if (absorbed < 0)
        return;
    for (int i = 0; i < prs_nreports; i++)
        if (m->rep[i] && prs_reports[i]->link)
            prs_reports[i]->link(m->rep[i], m, kept, absorbed);
}

const char *prs_req_name(const prs_model *m, int root)
{
    return prs_ids_name(m->ids, root);
}

static void scratch_reserve(prs_model *m, size_t need)
{
    if (need > m->scratch_cap) {
        m->scratch_cap = need * 2;
        m->scratch = prs_xrealloc(m->scratch, m->scratch_cap);
    }
}

/* The res list as JSON text: `["id1","id2"]`, `"` and `\` escaped, control
 * bytes dropped. The same step's list comes three times in a row (schedule,
 * execution, forward), so the last text is kept and reused while the roots
 * are the same (a root's name never changes). */
const char *prs_res_list(prs_model *m, int *len)
{
    if (m->res_len >= 0 && m->nres_roots == m->nroots &&
        !memcmp(m->res_roots, m->roots, (size_t)m->nroots * sizeof *m->roots)) {
        *len = m->res_len;
        return m->scratch;
    }
    size_t o = 0;
    scratch_reserve(m, 2 + 1);
    m->scratch[o++] = '[';
    for (int i = 0; i < m->nroots; i++) {
        const char *n = prs_req_name(m, m->roots[i]);
        int nl = prs_ids_name_len(m->ids, m->roots[i]);
        scratch_reserve(m, o + (size_t)nl * 2 + 8); /* worst case: every byte escaped */
        if (i)
            m->scratch[o++] = ',';
        m->scratch[o++] = '"';
        int plain = 1;
        for (int j = 0; j < nl && plain; j++)
            plain = n[j] != '"' && n[j] != '\\' && (unsigned char)n[j] >= 0x20;
        if (plain) {
            memcpy(m->scratch + o, n, (size_t)nl);
            o += (size_t)nl;
        } else {
            for (int j = 0; j < nl && n[j]; j++) { /* an id holding an escaped NUL ends there */
                if ((unsigned char)n[j] < 0x20)
                    continue;
                if (n[j] == '"' || n[j] == '\\')
                    m->scratch[o++] = '\\';
                m->scratch[o++] = n[j];
            }
        }
        m->scratch[o++] = '"';
    }
    m->scratch[o++] = ']';
    m->scratch[o] = 0;
    *len = (int)o;
    if (m->nroots > m->capres_roots) {
        m->capres_roots = m->nroots * 2;
        m->res_roots = prs_xrealloc(m->res_roots, (size_t)m->capres_roots * sizeof *m->res_roots);
    }
    if (m->nroots)
        memcpy(m->res_roots, m->roots, (size_t)m->nroots * sizeof *m->roots);
    m->nres_roots = m->nroots;
    m->res_len = (int)o;
    return m->scratch;
}

void prs_kv_numbers(const prs_args *a, double kv[6])
{
    double total = a->total, free_ = a->free, used = a->used;
    if (isnan(free_) && !isnan(a->free_after))
        free_ = a->free_after;
    if (isnan(used) && !isnan(total) && !isnan(free_))
        used = total - free_;
    if (isnan(free_) && !isnan(total) && !isnan(used))
        free_ = total - used;
    double alloc = NAN, freed = NAN;
    if (!isnan(a->free_before) && !isnan(a->free_after)) {
        alloc = a->free_before - a->free_after > 0 ? a->free_before - a->free_after : 0;
        freed = a->free_after - a->free_before > 0 ? a->free_after - a->free_before : 0;
    }
    if (!isnan(a->allocated))
        alloc = a->allocated;
    double rate = NAN;
    if (!isnan(a->usage_pct))
        rate = a->usage_pct > 1 ? a->usage_pct / 100.0 : a->usage_pct;
    else if (!isnan(used) && !isnan(total) && total > 0)
        rate = used / total;
    kv[0] = total;
    kv[1] = used;
    kv[2] = free_;
    kv[3] = alloc;
    kv[4] = freed;
    kv[5] = rate;
}

int prs_model_open(prs_model *m, const prs_opts *opts, prs_store **stores, int n, int64_t origin)
{
    memset(m, 0, sizeof *m);
    m->opts = opts;
    m->stores = stores;
    m->nstores = n;
    m->origin_ns = origin;
    m->ids = prs_ids_new();
    m->res_len = -1;
    prs_args_init(&m->args);
    prs_args_init(&m->args_cache);
    if (prs_out_open(&m->out, opts->output, opts->csv, opts->db) != 0)
        return -1;
    if (prs_readers_writers(prs_readers_jobs(opts->jobs))) /* the outputs' encoding on threads (wqueue.c) */
        prs_out_start_writers(&m->out);
    if (opts->tap)
        m->out.tap = *opts->tap; /* rows (table.c) and records (below) go to it */
    m->rep = prs_xcalloc((size_t)prs_nreports, sizeof *m->rep);
    m->hooks = prs_xcalloc((size_t)PRS_NKINDS * (size_t)prs_nreports, sizeof *m->hooks);
    for (int i = 0; i < prs_nreports; i++) {
        const prs_report *r = prs_reports[i];
        m->rep[i] = r->open(m);
        if (!m->rep[i] || !r->record)
            continue;
        for (int k = 0; k < PRS_NKINDS; k++)
            if (r->kinds & PRS_KIND(k))
                m->hooks[k * prs_nreports + m->nhooks[k]++] = (prs_hook){r->record, m->rep[i], i};
    }
    m->tl = prs_timeline_open(&m->out, opts->json, opts->perfetto, opts->tap_counters, origin, opts->trace_object);
    return 0;
}

void *prs_model_state(const prs_model *m, const prs_report *r)
{
    for (int i = 0; i < prs_nreports; i++)
        if (prs_reports[i] == r)
            return m->rep ? m->rep[i] : NULL;
    return NULL;
}

void prs_model_want(prs_model *m, const prs_report *r, enum prs_kind k)
{
    int me = 0;
    while (me < prs_nreports && prs_reports[me] != r)
        me++;
    if (me == prs_nreports || !m->rep[me] || !r->record)
        return;
    prs_hook *h = m->hooks + (size_t)k * (size_t)prs_nreports;
    int at = 0, n = m->nhooks[k];
    while (at < n && h[at].report < me)
        at++;
    if (at < n && h[at].report == me)
        return; /* already taken */
    memmove(h + at + 1, h + at, (size_t)(n - at) * sizeof *h);
    h[at] = (prs_hook){r->record, m->rep[me], me};
    m->nhooks[k]++;
}

static void counters(prs_model *m, const prs_rec *r, enum prs_kind k)
{
    const prs_args *a = &m->args;
    int pid = prs_timeline_pid(r->store);
    char name[64];
    if (k == K_KVSTATUS) {
        double kv[6];
        prs_kv_numbers(a, kv);
        static const char *const blocks[] = {"used", "free"};
        double v[2] = {kv[1], kv[2]};
        if (!isnan(kv[1]) || !isnan(kv[2]))
            prs_timeline_counter(m->tl, pid, "KV cache blocks", r->ts, blocks, v, 2);
        static const char *const usage[] = {"usage"};
        if (!isnan(kv[5]))
            prs_timeline_counter(m->tl, pid, "KV cache usage", r->ts, usage, &kv[5], 1);
    } else if ((k == K_QUEUE || k == K_ENQUEUE || k == K_DEQUEUE)) {
        static const char *const q[] = {"waiting", "running", "swapped"};
        double v[3];
        prs_reqstatus_sizes(m, r->store->index, v);
        if (!isnan(a->queue_size))
            prs_timeline_counter(m->tl, pid, "queue size", r->ts, q, v, 3);
    } else if (k == K_CPU) {
        static const char *const s[] = {"busy %"};
        if (a->cpu_index >= 0)
            snprintf(name, sizeof name, "host CPU %d", a->cpu_index);
        else
            snprintf(name, sizeof name, "host CPU");
        if (!isnan(a->usage))
            prs_timeline_counter(m->tl, pid, name, r->ts, s, &a->usage, 1);
    } else if (k == K_MEM) {
        static const char *const s[] = {"used MiB", "available MiB"};
        double v[2] = {a->mused, a->available};
        prs_timeline_counter(m->tl, pid, "host memory", r->ts, s, v, 2);
    } else if (k == K_PROC) {
        static const char *const s1[] = {"cpu %"};
        static const char *const s2[] = {"rss MiB"};
        if (!isnan(a->cpu))
            prs_timeline_counter(m->tl, pid, "process CPU", r->ts, s1, &a->cpu, 1);
        if (!isnan(a->rss))
            prs_timeline_counter(m->tl, pid, "process memory", r->ts, s2, &a->rss, 1);
    } else if (k == K_DEVMEM) {
        /* One counter track per device: the name carries the real device id. */
        static const char *const s[] = {"used MiB"};
        snprintf(name, sizeof name, "GPU %d memory", a->device);
        if (!isnan(a->usage))
            prs_timeline_counter(m->tl, pid, name, r->ts, s, &a->usage, 1);
        static const char *const u[] = {"util %"};
        snprintf(name, sizeof name, "GPU %d utilization", a->device);
        if (!isnan(a->util))
            prs_timeline_counter(m->tl, pid, name, r->ts, u, &a->util, 1);
    }
}

static void swap_args(prs_model *m)
{
    prs_args t = m->args;
    m->args = m->args_cache;
    m->args_cache = t;
    m->args_swapped = !m->args_swapped;
}

/* Below this length decoding is cheaper than comparing and copying. */
#define ARGS_CACHE_MIN 512

/* Decodes r's args into m->args, reusing the previous long args' decode
 * when the text is byte-identical (decoding is a pure function of it). */
static void decode_args(prs_model *m, const prs_rec *r)
{
    if (m->args_swapped)
        swap_args(m);
    if (r->pre) { /* a reader thread decoded it (readers.c) */
        prs_args_copy(&m->args, r->pre);
        return;
    }
    if (r->args_len < ARGS_CACHE_MIN) {
        prs_args_decode(&m->args, r->args, r->args_len);
        return;
    }
    if (r->args_len != m->args_text_len || memcmp(r->args, m->args_text, (size_t)r->args_len) != 0) {
        if (r->args_len + 1 > m->args_text_cap) {
            m->args_text_cap = r->args_len * 2 + 1;
            free(m->args_text); /* the cached decode pointing into it is replaced below */
            m->args_text = prs_xmalloc((size_t)m->args_text_cap);
        }
        memcpy(m->args_text, r->args, (size_t)r->args_len);
        m->args_text[r->args_len] = 0;
        m->args_text_len = r->args_len;
        prs_args_decode(&m->args_cache, m->args_text, r->args_len);
        m->cache_nodes_valid = 0;
    }
    swap_args(m);
}

void prs_model_record(prs_model *m, const prs_rec *r)
{
    m->nrec++;
    if (m->out.tap.record)
        m->out.tap.record(m->out.tap.ctx, r);
    m->now_ns = r->ts;
    if (r->ts + r->dur > m->last_ns)
        m->last_ns = r->ts + r->dur;
    decode_args(m, r);
    enum prs_kind k = prs_kind_of(r->name, &m->args);
    prs_store *s = r->store;
    if (k == K_FORWARD)
        s->has_forward = 1;
    else if (k == K_BATCH)
        s->has_batch = 1;
    else if (k == K_HTTPREQ)
        s->has_request = 1;
    if (k == K_LINK && m->args.from.p && m->args.to.p) {
        apply_link(m, s);
        m->nroots = 0;
    } else {
        resolve(m);
    }
    if (m->tl)
        m->cur_lane = prs_timeline_lane(m->tl, s, r->cat, r->tid, r->ts,
                                        k == K_CPU || k == K_MEM || k == K_PROC || k == K_DEVMEM ? 0 : r->dur);
    const prs_hook *h = m->hooks + (size_t)k * (size_t)prs_nreports;
    for (const prs_hook *e = h + m->nhooks[k]; h < e; h++)
        h->record(h->st, m, r, k);
    if (m->tl) {
        if (k != K_CPU && k != K_MEM && k != K_PROC && k != K_DEVMEM)
            prs_timeline_slice(m->tl, r, &m->args, m->cur_lane);
        counters(m, r, k);
    }
    if ((m->nrec & 1023) == 0)
        for (int i = 0; i < prs_nreports; i++)
            if (m->rep[i] && prs_reports[i]->tick)
                prs_reports[i]->tick(m->rep[i], m);
}

/* The hooks in table order (reports.c says why the order matters). */
void prs_model_finish(prs_model *m)
{
    for (int i = 0; i < prs_nreports; i++)
        if (m->rep[i] && prs_reports[i]->finish)
            prs_reports[i]->finish(m->rep[i], m);
}

void prs_model_summary(const prs_model *m, const struct prs_sessions *ss)
{
    for (int i = 0; i < prs_nreports; i++)
        if (m->rep[i] && prs_reports[i]->summary)
            prs_reports[i]->summary(m->rep[i], m, ss);
}

void prs_model_close(prs_model *m)
{
    for (int i = 0; m->rep && i < prs_nreports; i++)
        if (m->rep[i] && prs_reports[i]->close)
            prs_reports[i]->close(m->rep[i], m);
    free(m->hooks);
    m->hooks = NULL;
    free(m->link_store);
    free(m->roots);
    free(m->scratch);
    free(m->res_roots);
    free(m->cache_nodes);
    if (m->args_swapped)
        swap_args(m);
    prs_args_free(&m->args);
    prs_args_free(&m->args_cache);
    free(m->args_text);
    prs_ids_free(m->ids);
    m->ids = NULL;
}

void prs_model_free(prs_model *m)
{
    for (int i = 0; m->rep && i < prs_nreports; i++)
        if (m->rep[i] && prs_reports[i]->free)
            prs_reports[i]->free(m->rep[i]);
    free(m->rep);
    m->rep = NULL;
}
