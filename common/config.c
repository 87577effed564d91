/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config.c — reads and validates the JSON config file into sp_config.
 *
 * Design: one table, `keys`, names every key we know with the function that
 * checks and stores its value. Parsing starts from the defaults, walks the
 * top-level object once and hands each member to its key's function; an
 * unknown member gets a warning with a "did you mean" when a known key is
 * within a small edit distance. Every bad value produces exactly one
 * message naming the key, the bad value and the value used instead, and is
 * replaced by that value: a config never stops the host program.
 *
 * A syntax error (reported by jansson with line and column) leaves the
 * caller's sp_config untouched, so the runtime keeps the previous settings:
 * a file caught half-written by an editor never flips collection. (The
 * runtime says so when it logs; the messages here name only the problem,
 * because `servprof config check` and the editor show them too.)
 *
 * One parser for everybody: sp_config_json_load() is the only place the
 * text becomes JSON (same jansson flags, same rejections: a byte-order
 * mark, duplicate keys, NUL escapes, a top level that is not an object),
 * used by the runtime, `servprof config check` and the "enable" editor
 * (config_edit.c), so the editor never accepts a file the library rejects.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "config.h"
#include "fsutil.h"
#include "log.h"


/* ---- diagnostics -------------------------------------------------- */

static void diag(sp_config_diag *d, int is_error, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void diag(sp_config_diag *d, int is_error, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (d) {
        if (is_error)
            d->nerrors++;
        else
            d->nwarnings++;
    }
    if (d && d->emit)
        d->emit(d->ctx, is_error, msg);
    else
        sp_log(is_error ? SP_LOG_ERROR : SP_LOG_WARNING, "config: %s", msg);
}

/* The JSON text of a value, shortened for messages. */
static void show(const json_t *v, char *out, size_t len)
{
    char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    if (!s) {
        snprintf(out, len, "(unprintable)");
        return;
    }
    if (strlen(s) > 60)
        snprintf(out, len, "%.57s...", s);
    else
        snprintf(out, len, "%s", s);
    free(s);
}

/* ---- defaults ----------------------------------------------------- */

static void default_prof_dir(char *out, size_t len)
{
    const char *home = getenv("HOME");
    if (!home || !*home) {
        struct passwd pw, *res = NULL;
        char buf[4096];
        if (getpwuid_r(getuid(), &pw, buf, sizeof buf, &res) == 0 && res && res->pw_dir)
            home = res->pw_dir;
    }
    if (home && *home && strlen(home) + 24 < len)
        snprintf(out, len, "%s/.ms_server_profiler", home);
    else
        snprintf(out, len, ".ms_server_profiler");
}

void sp_config_defaults(sp_config *c)
{
    memset(c, 0, sizeof *c);
    default_prof_dir(c->prof_dir, sizeof c->prof_dir);
    c->profiler_level = SERVPROF_LEVEL_INFO;
    c->host_system_usage_freq = -1;
    c->npu_memory_usage_freq = -1;
    snprintf(c->aclprof_aicore_metrics, sizeof c->aclprof_aicore_metrics,
             "ACL_AICORE_PIPE_UTILIZATION");
    c->buffer_bytes = (size_t)SP_DEFAULT_BUFFER_KB * 1024;
    c->metric_max_conns = 16; /* SP_MHTTP_DEFAULT_CONNS */
    c->trace_export = -1; /* absent: MS_TRACE_ENABLE decides (lib/otlp/otlp_conf.c) */
}

const char *sp_config_level_name(int level)
{
    switch (level) {
    case SERVPROF_LEVEL_ERROR: return "ERROR";
    case SERVPROF_LEVEL_INFO: return "INFO";
    case SERVPROF_LEVEL_DETAILED: return "DETAILED";
    case SERVPROF_LEVEL_VERBOSE: return "VERBOSE";
    default: return "?";
    }
}

/* ---- value checkers: one per kind of key ---------------------------- */

typedef struct key_def key_def;
typedef void (*key_fn)(const key_def *k, const json_t *v, sp_config *c, sp_config_diag *d);
struct key_def {
    const char *name;
    key_fn fn;
    int lo, hi; /* range for integer keys */
};

#define FIELD_INT(c, name) field_int((c), (name))

/* The int field of each integer-valued key. */
static int *field_int(sp_config *c, const char *name)
{
    if (!strcmp(name, "enable")) return &c->enable;
    if (!strcmp(name, "metric_enable")) return &c->metric_enable;
    if (!strcmp(name, "metric_max_connections")) return &c->metric_max_conns;
    if (!strcmp(name, "trace_export")) return &c->trace_export;
    if (!strcmp(name, "host_system_usage_freq")) return &c->host_system_usage_freq;
    if (!strcmp(name, "npu_memory_usage_freq")) return &c->npu_memory_usage_freq;
    if (!strcmp(name, "acl_task_time")) return &c->acl_task_time;
    if (!strcmp(name, "timelimit")) return &c->timelimit;
    if (!strcmp(name, "torch_prof_stack")) return &c->torch_prof_stack;
    if (!strcmp(name, "torch_prof_modules")) return &c->torch_prof_modules;
    if (!strcmp(name, "torch_prof_step_num")) return &c->torch_prof_step_num;
    return NULL;
}

/* The value of an integer or flag key of c (the keys of field_int and
 * profiler_level), for servprof_session_config_int(). 0, or -1 when name is
 * not such a key. */
int sp_config_int_key(const sp_config *c, const char *name, int64_t *out)
{
    if (!strcmp(name, "profiler_level")) {
        *out = c->profiler_level;
        return 0;
    }
    if (!strcmp(name, "profiler_step_num")) {
        *out = c->profiler_step_num;
        return 0;
    }
    const int *f = field_int((sp_config *)c, name);
    if (!f)
        return -1;
    *out = *f;
    return 0;
}

/* enable: only the integer 1 turns collection on. */
static void key_enable(const key_def *k, const json_t *v, sp_config *c, sp_config_diag *d)
{
    char s[80];
    if (json_is_integer(v) && (json_integer_value(v) == 0 || json_integer_value(v) == 1)) {
        c->enable = (int)json_integer_value(v);
        return;
    }
    show(v, s, sizeof s);
    diag(d, 0, "'%s': %s is not 0 or 1 (only the integer 1 turns collection on); using 0",
         k->name, s);
    c->enable = 0;
}

/* metric_enable: 0 / 1 or false / true. */
static void key_flag(const key_def *k, const json_t *v, sp_config *c, sp_config_diag *d)
{
    int *f = FIELD_INT(c, k->name);
    char s[80];
    if (json_is_boolean(v)) {
        *f = json_is_true(v);
        return;
    }
    if (json_is_integer(v) && (json_integer_value(v) == 0 || json_integer_value(v) == 1)) {
        *f = (int)json_integer_value(v);
        return;
    }
    show(v, s, sizeof s);
    diag(d, 0, "'%s': %s is not 0, 1, true or false; using %s", k->name, s,
         !strncmp(k->name, "torch", 5) ? "false" : "0");
    *f = 0;
}

/* Frequencies: -1 off, lo..hi Hz; above hi clamps, anything else is off. */
static void key_freq(const key_def *k, const json_t *v, sp_config *c, sp_config_diag *d)
{
    int *f = FIELD_INT(c, k->name);
    char s[80];
    show(v, s, sizeof s);
    if (!json_is_integer(v)) {
        diag(d, 0, "'%s': %s is not an integer (-1 off, %d..%d Hz); using -1 (off)", k->name, s,
             k->lo, k->hi);
        *f = -1;
        return;
    }
    json_int_t x = json_integer_value(v);
    if (x == -1 || (x >= k->lo && x <= k->hi)) {
        *f = (int)x;
    } else if (x > k->hi) {
        diag(d, 0, "'%s': %s is above the maximum %d Hz; using %d", k->name, s, k->hi, k->hi);
        *f = k->hi;
    } else {
        diag(d, 0, "'%s': %s is not -1 or %d..%d Hz; using -1 (off)", k->name, s, k->lo, k->hi);
        *f = -1;
    }
}

/* Plain ranged integers (acl_task_time, torch_prof_step_num, timelimit):
 * above the range clamps to hi only for timelimit (the spec says so);
 * anything else falls back to the default. */
static void key_int_range(const key_def *k, const json_t *v, sp_config *c, sp_config_diag *d)
{
    int *f = FIELD_INT(c, k->name);
    int dflt = *f;
    char s[80];
    show(v, s, sizeof s);
    if (!json_is_integer(v)) {
        diag(d, 0, "'%s': %s is not an integer (%d..%d); using %d", k->name, s, k->lo, k->hi, dflt);
        return;
    }
    json_int_t x = json_integer_value(v);
    if (x >= k->lo && x <= k->hi) {
        *f = (int)x;
    } else if (x > k->hi && !strcmp(k->name, "timelimit")) {
        diag(d, 0, "'%s': %s is above the maximum %d s; using %d", k->name, s, k->hi, k->hi);
        *f = k->hi;
    } else {
        diag(d, 0, "'%s': %s is outside %d..%d; using %d", k->name, s, k->lo, k->hi, dflt);
    }
}

static void key_step_num(const key_def *k, const json_t *v, sp_config *c, sp_config_diag *d)
{
    char s[80];
    show(v, s, sizeof s);
    /* 0 and null are what files say for "no limit"; accept them quietly. */
    if (json_is_null(v) || (json_is_integer(v) && json_integer_value(v) == 0)) {
        c->profiler_step_num = 0;
    } else if (json_is_integer(v) && json_integer_value(v) >= 1) {
        c->profiler_step_num = (int64_t)json_integer_value(v);
    } else {
        diag(d, 0, "'%s': %s is not an integer >= 1; using no step limit", k->name, s);
        c->profiler_step_num = 0;
    }
}

static void key_buffer(const key_def *k, const json_t *v, sp_config *c, sp_config_diag *d)
{
    char s[80];
    show(v, s, sizeof s);
    if (!json_is_integer(v)) {
        diag(d, 0, "'%s': %s is not an integer (%d..%d KiB); using %d", k->name, s, k->lo, k->hi,
             SP_DEFAULT_BUFFER_KB);
        return;
    }
    json_int_t x = json_integer_value(v);
    json_int_t used = x < k->lo ? k->lo : x > k->hi ? k->hi : x;
    if (used != x)
        diag(d, 0, "'%s': %s is outside %d..%d KiB; using %lld", k->name, s, k->lo, k->hi,
             (long long)used);
    c->buffer_bytes = (size_t)used * 1024;
}

/* profiler_level: names (case-insensitive) or the numbers 10/20/30/40. */
static int level_from_name(const char *s)
{
    static const struct { const char *name; int level; } names[] = {
        {"ERROR", 10}, {"L0", 10}, {"INFO", 20}, {"L1", 20},
        {"DETAILED", 30}, {"L2", 30}, {"VERBOSE", 40},
        {"10", 10}, {"20", 20}, {"30", 30}, {"40", 40},
    };
    char t[32];
    size_t n = 0;
    while (isspace((unsigned char)*s))
        s++;
    while (*s && n < sizeof t - 1)
        t[n++] = *s++;
    while (n > 0 && isspace((unsigned char)t[n - 1]))
        n--;
    t[n] = '\0';
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcasecmp(t, names[i].name))
            return names[i].level;
    return 0;
}

static void key_level(const key_def *k, const json_t *v, sp_config *c, sp_config_diag *d)
{
    int level = 0;
    if (json_is_string(v))
        level = level_from_name(json_string_value(v));
    else if (json_is_integer(v)) {
        json_int_t x = json_integer_value(v);
        if (x == 10 || x == 20 || x == 30 || x == 40)
            level = (int)x;
    }
    if (level) {
        c->profiler_level = level;
        return;
    }
    char s[80];
    show(v, s, sizeof s);
    diag(d, 0, "'%s': %s is not ERROR/L0, INFO/L1, DETAILED/L2, VERBOSE or 10/20/30/40; "
         "using INFO", k->name, s);
    c->profiler_level = SERVPROF_LEVEL_INFO;
}

static int expect_string(const key_def *k, const json_t *v, sp_config_diag *d, const char *used)
{
    if (json_is_string(v))
        return 1;
    char s[80];
    show(v, s, sizeof s);
    diag(d, 0, "'%s': %s is not a string; using %s", k->name, s, used);
    return 0;
}

/* Expands a leading "~" and every ${VAR}. Returns 0, or -1 with a reason. */
static int expand_path(const char *in, char *out, size_t len, char *why, size_t whylen)
{
    size_t n = 0;
    const char *p = in;
    if (p[0] == '~' && (p[1] == '/' || p[1] == '\0')) {
        char home[SP_PATH_MAX];
        default_prof_dir(home, sizeof home); /* "<home>/.ms_server_profiler" */
        char *cut = strstr(home, "/.ms_server_profiler");
        if (!cut) {
            snprintf(why, whylen, "the home folder is unknown");
            return -1;
        }
        *cut = '\0';
        n = (size_t)snprintf(out, len, "%s", home);
        p++;
    }
    while (*p) {
        if (n >= len - 1) {
            snprintf(why, whylen, "the expanded path is longer than %zu bytes", len - 1);
            return -1;
        }
        if (p[0] == '$' && p[1] == '{') {
            const char *end = strchr(p + 2, '}');
            if (!end) {
                snprintf(why, whylen, "'${' has no closing '}'");
                return -1;
            }
            char var[256];
            if ((size_t)(end - p - 2) >= sizeof var || end == p + 2) {
                snprintf(why, whylen, "bad variable name in '%.*s'", (int)(end - p + 1), p);
                return -1;
            }
            snprintf(var, sizeof var, "%.*s", (int)(end - p - 2), p + 2);
            const char *val = getenv(var);
            if (!val) {
                snprintf(why, whylen, "${%.200s} is not set", var);
                return -1;
            }
            size_t vl = strlen(val);
            if (n + vl >= len) {
                snprintf(why, whylen, "the expanded path is longer than %zu bytes", len - 1);
                return -1;
            }
            memcpy(out + n, val, vl);
            n += vl;
            p = end + 1;
            continue;
        }
        out[n++] = *p++;
    }
    out[n] = '\0';
    if (n == 0) {
        snprintf(why, whylen, "it expands to an empty path");
        return -1;
    }
    return 0;
}

static void key_prof_dir(const key_def *k, const json_t *v, sp_config *c, sp_config_diag *d)
{
    if (!expect_string(k, v, d, c->prof_dir))
        return;
    const char *s = json_string_value(v);
    char out[SP_PATH_MAX], why[256];
    if (!*s) {
        diag(d, 0, "'%s': \"\" is empty; using %s", k->name, c->prof_dir);
        return;
    }
    if (expand_path(s, out, sizeof out, why, sizeof why) != 0) {
        diag(d, 0, "'%s': \"%.200s\": %s; using %s", k->name, s, why, c->prof_dir);
        return;
    }
    snprintf(c->prof_dir, sizeof c->prof_dir, "%s", out);
}

/* acl_prof_task_time_level: L0 | L1, optionally ";N" seconds (1..999). */
static void key_task_level(const key_def *k, const json_t *v, sp_config *c, sp_config_diag *d)
{
    if (!expect_string(k, v, d, "L0"))
        return;
    const char *s = json_string_value(v);
    char head[16];
    const char *semi = strchr(s, ';');
    size_t hl = semi ? (size_t)(semi - s) : strlen(s);
    if (hl >= sizeof head)
        hl = sizeof head - 1;
    snprintf(head, sizeof head, "%.*s", (int)hl, s);
    int lvl = -1;
    if (!*head || !strcasecmp(head, "L0"))
        lvl = 0; /* "" is what the reference's sample file says: L0 */
    else if (!strcasecmp(head, "L1"))
        lvl = 1;
    if (lvl < 0) {
        diag(d, 0, "'%s': \"%.100s\" is not L0 or L1 (optionally ;N seconds); using L0",
             k->name, s);
        c->acl_prof_task_time_level = 0;
        c->acl_prof_task_time_seconds = 0;
        return;
    }
    c->acl_prof_task_time_level = lvl;
    c->acl_prof_task_time_seconds = 0;
    if (semi) {
        char *end;
        errno = 0;
        long secs = strtol(semi + 1, &end, 10);
        while (isspace((unsigned char)*end))
            end++;
        if (end == semi + 1 || *end || errno) {
            diag(d, 0, "'%s': \"%.100s\": \"%.20s\" is not a number of seconds; using L%d "
                 "without a time limit", k->name, s, semi + 1, lvl);
        } else if (secs < 1) {
            diag(d, 0, "'%s': \"%.100s\": %ld s is below 1; using L%d without a time limit",
                 k->name, s, secs, lvl);
        } else if (secs > 999) {
            diag(d, 0, "'%s': \"%.100s\": %ld s is above 999; using L%d;999", k->name, s, secs, lvl);
            c->acl_prof_task_time_seconds = 999;
        } else {
            c->acl_prof_task_time_seconds = (int)secs;
        }
    }
}

static const char *const acl_prof_names[] = {
    "ACL_PROF_ACL_API", "ACL_PROF_TASK_TIME", "ACL_PROF_TASK_TIME_L0", "ACL_PROF_AICORE_METRICS",
    "ACL_PROF_AICPU", "ACL_PROF_L2CACHE", "ACL_PROF_HCCL_TRACE", "ACL_PROF_TRAINING_TRACE",
    "ACL_PROF_MSPROFTX", "ACL_PROF_RUNTIME_API", "ACL_PROF_TASK_MEMORY", "ACL_PROF_OP_ATTR",
    "ACL_PROF_GE_API_L0", "ACL_PROF_GE_API_L1", NULL};
static const char *const aicore_names[] = {
    "ACL_AICORE_ARITHMETIC_UTILIZATION", "ACL_AICORE_PIPE_UTILIZATION",
    "ACL_AICORE_MEMORY_BANDWIDTH", "ACL_AICORE_L0B_AND_WIDTH", "ACL_AICORE_RESOURCE_CONFLICT_RATIO",
    "ACL_AICORE_MEMORY_UB", "ACL_AICORE_L2_CACHE", "ACL_AICORE_MEMORY_ACCESS", "ACL_AICORE_NONE",
    NULL};

static int in_list(const char *const *list, const char *s, size_t n)
{
    for (; *list; list++)
        if (strlen(*list) == n && !strncmp(*list, s, n))
            return 1;
    return 0;
}

/* Walks a `sep`-separated list: sets *start and *n to the next item, trimmed
 * of white space, skipping empty ones. Returns 0 at the end of the list. */
static int next_item(const char **s, char sep, const char **start, size_t *n)
{
    const char *p = *s;
    while (*p == sep || isspace((unsigned char)*p))
        p++;
    if (!*p) {
        *s = p;
        return 0;
    }
    const char *b = p; /* neither a separator nor space: the item is not empty */
    while (*p && *p != sep)
        p++;
    const char *e = p;
    while (isspace((unsigned char)e[-1]))
        e--;
    *s = p;
    *start = b;
    *n = (size_t)(e - b);
    return 1;
}

/* aclDataTypeConfig: a comma list of ACL_PROF_* names; unknown ones dropped. */
static void key_acl_types(const key_def *k, const json_t *v, sp_config *c, sp_config_diag *d)
{
    if (!expect_string(k, v, d, "\"\""))
        return;
    const char *s = json_string_value(v);
    char kept[SP_FILTER_LEN] = "", bad[512] = "";
    size_t kn = 0, bn = 0;
    const char *start;
    size_t n;
    while (next_item(&s, ',', &start, &n)) {
        if (in_list(acl_prof_names, start, n) && kn + n + 2 < sizeof kept)
            kn += (size_t)snprintf(kept + kn, sizeof kept - kn, "%s%.*s", kn ? "," : "", (int)n, start);
        else if (bn + n + 3 < sizeof bad)
            bn += (size_t)snprintf(bad + bn, sizeof bad - bn, "%s%.*s", bn ? ", " : "", (int)n, start);
    }
    if (bn)
        diag(d, 0, "'%s': unknown name(s) %s (expected ACL_PROF_* names such as "
             "ACL_PROF_TASK_TIME); using \"%s\"", k->name, bad, kept);
    snprintf(c->acl_data_type_config, sizeof c->acl_data_type_config, "%s", kept);
}

static void key_aicore(const key_def *k, const json_t *v, sp_config *c, sp_config_diag *d)
{
    if (!expect_string(k, v, d, c->aclprof_aicore_metrics))
        return;
    const char *s = json_string_value(v);
    if (!*s)
        return; /* "" in the reference's sample file: the default */
    if (in_list(aicore_names, s, strlen(s))) {
        snprintf(c->aclprof_aicore_metrics, sizeof c->aclprof_aicore_metrics, "%s", s);
        return;
    }
    diag(d, 0, "'%s': \"%.100s\" is not an ACL_AICORE_* name; using %s", k->name, s,
         c->aclprof_aicore_metrics);
}

/* api_filter / kernel_filter: kept as written (';'-separated substrings). */
static void key_filter(const key_def *k, const json_t *v, sp_config *c, sp_config_diag *d)
{
    char *f = !strcmp(k->name, "api_filter") ? c->api_filter : c->kernel_filter;
    if (!expect_string(k, v, d, "\"\" (no filter)"))
        return;
    const char *s = json_string_value(v);
    if (strlen(s) >= SP_FILTER_LEN) {
        diag(d, 0, "'%s': the value is %zu bytes, longer than %d; using \"\" (no filter)",
             k->name, strlen(s), SP_FILTER_LEN - 1);
        f[0] = '\0';
        return;
    }
    snprintf(f, SP_FILTER_LEN, "%s", s);
}

/* domain: ';'-separated names, trimmed; empty parts ignored. */
static void key_domain(const key_def *k, const json_t *v, sp_config *c, sp_config_diag *d)
{
    if (!expect_string(k, v, d, "\"\" (every domain)"))
        return;
    const char *s = json_string_value(v);
    c->ndomains = 0;
    const char *start;
    size_t n;
    while (next_item(&s, ';', &start, &n)) {
        if (n >= SP_DOMAIN_LEN) {
            diag(d, 0, "'%s': domain \"%.*s...\" is longer than %d bytes; ignoring it", k->name,
                 40, start, SP_DOMAIN_LEN - 1);
            continue;
        }
        if (c->ndomains == SP_MAX_DOMAINS) {
            diag(d, 0, "'%s': more than %d domains; ignoring \"%.*s\" and the rest", k->name,
                 SP_MAX_DOMAINS, (int)n, start);
            break;
        }
        snprintf(c->domains[c->ndomains++], SP_DOMAIN_LEN, "%.*s", (int)n, start);
    }
}

/* metric_dir: where each process publishes its live metrics file; "" keeps
 * the default, <prof_dir>/metrics, chosen when metrics start. */
static void key_metric_dir(const key_def *k, const json_t *v, sp_config *c, sp_config_diag *d)
{
    if (!expect_string(k, v, d, "\"\" (<prof_dir>/metrics)"))
        return;
    const char *s = json_string_value(v);
    char out[SP_PATH_MAX], why[256];
    if (!*s) {
        c->metric_dir[0] = '\0';
        return;
    }
    if (expand_path(s, out, sizeof out, why, sizeof why) != 0) {
        diag(d, 0, "'%s': \"%.200s\": %s; using \"\" (<prof_dir>/metrics)", k->name, s, why);
        c->metric_dir[0] = '\0';
        return;
    }
    snprintf(c->metric_dir, sizeof c->metric_dir, "%s", out);
}

/* metric_port: 0 (none), a port 1..65535 on 127.0.0.1, or "ADDR:PORT" (an
 * empty ADDR is 127.0.0.1 too: every interface takes "0.0.0.0:PORT"). */
static void key_metric_port(const key_def *k, const json_t *v, sp_config *c, sp_config_diag *d)
{
    char s[80];
    struct sockaddr_in sa;
    show(v, s, sizeof s);
    c->metric_listen[0] = '\0';
    if (json_is_integer(v) && json_integer_value(v) >= 0 && json_integer_value(v) <= 65535) {
        if (json_integer_value(v) > 0)
            snprintf(c->metric_listen, sizeof c->metric_listen, "127.0.0.1:%d",
                     (int)json_integer_value(v));
        return;
    }
    if (json_is_string(v) && strlen(json_string_value(v)) < sizeof c->metric_listen &&
        sp_mhttp_parse_listen(json_string_value(v), &sa) == 0) {
        snprintf(c->metric_listen, sizeof c->metric_listen, "%s", json_string_value(v));
        return;
    }
    diag(d, 0, "'%s': %s is not 0, a port 1..65535 or \"IPv4ADDR:PORT\"; using 0 (no endpoint "
         "in the process)", k->name, s);
}

const char *sp_config_listen_scope(const sp_config *c)
{
    return c->metric_listen[0] ? sp_mhttp_interfaces(c->metric_listen) : "none";
}

/* trace_endpoint: an http:// or https:// URL (the whole traces path). */
static void key_trace_endpoint(const key_def *k, const json_t *v, sp_config *c, sp_config_diag *d)
{
    c->trace_endpoint[0] = '\0';
    if (!expect_string(k, v, d, "\"\" (the OTEL_EXPORTER_OTLP_* variables)"))
        return;
    const char *s = json_string_value(v);
    if (!*s)
        return;
    if ((strncmp(s, "http://", 7) && strncmp(s, "https://", 8)) || strlen(s) >= sizeof c->trace_endpoint) {
        diag(d, 0, "'%s': \"%.200s\" is not an http:// or https:// URL; using \"\" (the "
             "OTEL_EXPORTER_OTLP_* variables)", k->name, s);
        return;
    }
    snprintf(c->trace_endpoint, sizeof c->trace_endpoint, "%s", s);
}

static const key_def keys[] = {
    {"enable", key_enable, 0, 1},
    {"metric_enable", key_flag, 0, 1},
    {"metric_dir", key_metric_dir, 0, 0},
    {"metric_port", key_metric_port, 0, 0},
    {"metric_max_connections", key_int_range, 1, 1024},
    {"trace_export", key_flag, 0, 1},
    {"trace_endpoint", key_trace_endpoint, 0, 0},
    {"prof_dir", key_prof_dir, 0, 0},
    {"profiler_level", key_level, 0, 0},
    {"host_system_usage_freq", key_freq, 1, 50},
    {"npu_memory_usage_freq", key_freq, 1, 50},
    {"acl_task_time", key_int_range, 0, 3},
    {"acl_prof_task_time_level", key_task_level, 0, 0},
    {"aclDataTypeConfig", key_acl_types, 0, 0},
    {"aclprofAicoreMetrics", key_aicore, 0, 0},
    {"api_filter", key_filter, 0, 0},
    {"kernel_filter", key_filter, 0, 0},
    {"timelimit", key_int_range, 0, 7200},
    {"domain", key_domain, 0, 0},
    {"torch_prof_stack", key_flag, 0, 1},
    {"torch_prof_modules", key_flag, 0, 1},
    {"torch_prof_step_num", key_int_range, 0, 1000000000},
    {"profiler_step_num", key_step_num, 1, 0},
    {"buffer_size_kb", key_buffer, 64, 65536},
};
#define NKEYS (sizeof keys / sizeof keys[0])

/* ---- unknown keys --------------------------------------------------- */

/* Case-insensitive Levenshtein distance, capped for long strings. */
static int distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63)
        return 99;
    int row[64];
    for (size_t j = 0; j <= lb; j++)
        row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int diag_prev = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int up = row[j];
            int cost = tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]);
            int best = diag_prev + cost;
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag_prev = up;
        }
    }
    return row[lb];
}

static void unknown_key(const char *name, sp_config_diag *d)
{
    const char *best = NULL;
    int bestd = 99;
    for (size_t i = 0; i < NKEYS; i++) {
        int dist = distance(name, keys[i].name);
        if (dist < bestd) {
            bestd = dist;
            best = keys[i].name;
        }
    }
    size_t len = strlen(name);
    int near = bestd <= 2 || (len >= 10 && bestd <= 3);
    if (near && bestd < (int)len)
        diag(d, 0, "unknown key '%.100s' ignored; did you mean '%s'?", name, best);
    else
        diag(d, 0, "unknown key '%.100s' ignored", name);
}

/* ---- parsing -------------------------------------------------------- */

json_t *sp_config_json_load(const char *text, size_t len, char *err, size_t errlen)
{
    if (len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3)) {
        snprintf(err, errlen, "byte-order mark (bytes EF BB BF) at the start of the file; "
                 "save it without BOM");
        return NULL;
    }
    json_error_t je;
    json_t *root = json_loadb(text, len, SP_CONFIG_JSON_FLAGS, &je);
    if (!root) {
        /* jansson names its own flag for this one; say what it means. */
        if (strstr(je.text, "JSON_ALLOW_NUL"))
            snprintf(err, errlen, "syntax error at line %d, column %d: a \\u0000 (NUL) "
                     "escape in a string is not allowed", je.line, je.column);
        else
            snprintf(err, errlen, "syntax error at line %d, column %d: %s", je.line, je.column,
                     je.text);
        return NULL;
    }
    if (!json_is_object(root)) {
        snprintf(err, errlen, "the top level is not a JSON object ({ ... })");
        json_decref(root);
        return NULL;
    }
    return root;
}

const char *sp_config_read_error(int rc, char *buf, size_t len)
{
    switch (rc) {
    case -ENOENT: return "the file does not exist";
    case -EISDIR: return "it is a folder, not a file";
    case -EINVAL: return "not a regular file (a FIFO, device or socket); a config must be a "
                         "regular file";
    case -EFBIG:
        snprintf(buf, len, "larger than the %u MiB limit for a config file",
                 SP_CONFIG_MAX_BYTES >> 20);
        return buf;
    default:
        snprintf(buf, len, "%s", strerror(-rc));
        return buf;
    }
}

int sp_config_parse(const char *text, size_t len, sp_config *c, sp_config_diag *d)
{
    char why[512];
    json_t *root = sp_config_json_load(text, len, why, sizeof why);
    if (!root) {
        diag(d, 1, "%s", why);
        return SERVPROF_ECONFIG;
    }
    sp_config *tmp = malloc(sizeof *tmp);
    if (!tmp) {
        json_decref(root);
        diag(d, 1, "out of memory while reading the config");
        return SERVPROF_ENOMEM;
    }
    sp_config_defaults(tmp);
    const char *name;
    json_t *v;
    json_object_foreach(root, name, v) {
        size_t i;
        for (i = 0; i < NKEYS; i++)
            if (!strcmp(name, keys[i].name))
                break;
        if (i < NKEYS)
            keys[i].fn(&keys[i], v, tmp, d);
        else
            unknown_key(name, d);
    }
    json_decref(root);
    *c = *tmp;
    free(tmp);
    return 0;
}

int sp_config_load(const char *path, sp_config *c, sp_config_diag *d)
{
    char *text;
    size_t len;
    int rc = sp_read_file(path, SP_CONFIG_MAX_BYTES, &text, &len);
    if (rc == -ENOENT)
        return SERVPROF_ENOTFOUND;
    if (rc != 0) {
        char buf[256];
        diag(d, 1, "cannot read the file: %s", sp_config_read_error(rc, buf, sizeof buf));
        return SERVPROF_EIO;
    }
    rc = sp_config_parse(text, len, c, d);
    free(text);
    return rc;
}

/* ---- default files -------------------------------------------------- */

static int json_quote(const char *s, char *out, size_t len)
{
    json_t *j = json_string(s);
    char *q = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
    json_decref(j);
    int n = q ? snprintf(out, len, "%s", q) : -1;
    free(q);
    return (n < 0 || (size_t)n >= len) ? -1 : 0;
}

int sp_config_default_text(char *buf, size_t len, int every_key)
{
    sp_config c;
    sp_config_defaults(&c);
    char dir[SP_PATH_MAX + 64];
    if (json_quote(c.prof_dir, dir, sizeof dir) != 0)
        return -1;
    int n;
    if (!every_key)
        n = snprintf(buf, len,
                     "{\n"
                     "    \"enable\": 0,\n"
                     "    \"prof_dir\": %s,\n"
                     "    \"profiler_level\": \"INFO\",\n"
                     "    \"acl_task_time\": 0,\n"
                     "    \"acl_prof_task_time_level\": \"L0\",\n"
                     "    \"timelimit\": 0,\n"
                     "    \"domain\": \"\"\n"
                     "}\n", dir);
    else
        n = snprintf(buf, len,
                     "{\n"
                     "    \"enable\": 0,\n"
                     "    \"metric_enable\": 0,\n"
                     "    \"metric_dir\": \"\",\n"
                     "    \"metric_port\": 0,\n"
                     "    \"prof_dir\": %s,\n"
                     "    \"profiler_level\": \"INFO\",\n"
                     "    \"host_system_usage_freq\": -1,\n"
                     "    \"npu_memory_usage_freq\": -1,\n"
                     "    \"acl_task_time\": 0,\n"
                     "    \"acl_prof_task_time_level\": \"L0\",\n"
                     "    \"aclDataTypeConfig\": \"\",\n"
                     "    \"aclprofAicoreMetrics\": \"ACL_AICORE_PIPE_UTILIZATION\",\n"
                     "    \"api_filter\": \"\",\n"
                     "    \"kernel_filter\": \"\",\n"
                     "    \"timelimit\": 0,\n"
                     "    \"domain\": \"\",\n"
                     "    \"torch_prof_stack\": false,\n"
                     "    \"torch_prof_modules\": false,\n"
                     "    \"torch_prof_step_num\": 0,\n"
                     "    \"profiler_step_num\": 0,\n"
                     "    \"buffer_size_kb\": %d\n"
                     "}\n", dir, SP_DEFAULT_BUFFER_KB);
    return (n < 0 || (size_t)n >= len) ? -1 : n;
}

int sp_config_create_default(const char *path, char *why, size_t whylen)
{
    size_t n = strlen(path);
    if (n < 5 || strcmp(path + n - 5, ".json") != 0) {
        snprintf(why, whylen, "the name does not end in .json");
        return SERVPROF_EINVAL;
    }
    char dir[SP_PATH_MAX];
    sp_path_dirname(path, dir, sizeof dir);
    if (!sp_dir_writable(dir)) {
        snprintf(why, whylen, "the folder '%s' does not exist or is not writable", dir);
        return SERVPROF_EIO;
    }
    char text[SP_PATH_MAX + 1024];
    int len = sp_config_default_text(text, sizeof text, 0);
    if (len < 0) {
        snprintf(why, whylen, "the default prof_dir is too long");
        return SERVPROF_EINVAL;
    }
    int rc = sp_write_atomic(path, text, (size_t)len, SP_FILE_MODE);
    if (rc != 0) {
        snprintf(why, whylen, "%s", strerror(-rc));
        return SERVPROF_EIO;
    }
    return 0;
}

/* ---- comparing configs ----------------------------------------------- */

int sp_config_changed_keys(const sp_config *a, const sp_config *b, char *out, size_t len)
{
    int n = 0;
    size_t used = 0;
    out[0] = '\0';
#define CMP(cond, name)                                                                        \
    if (cond) {                                                                                \
        n++;                                                                                   \
        if (used < len)                                                                        \
            used += (size_t)snprintf(out + used, len - used, "%s%s", used ? ", " : "", name); \
    }
    /* metric_enable, metric_dir, metric_port and metric_max_connections are
     * not listed: they take
     * effect at once (metrics.c logs it), not at the next start. */
    CMP(strcmp(a->prof_dir, b->prof_dir), "prof_dir");
    CMP(a->profiler_level != b->profiler_level, "profiler_level");
    CMP(a->host_system_usage_freq != b->host_system_usage_freq, "host_system_usage_freq");
    CMP(a->npu_memory_usage_freq != b->npu_memory_usage_freq, "npu_memory_usage_freq");
    CMP(a->acl_task_time != b->acl_task_time, "acl_task_time");
    CMP(a->acl_prof_task_time_level != b->acl_prof_task_time_level ||
            a->acl_prof_task_time_seconds != b->acl_prof_task_time_seconds,
        "acl_prof_task_time_level");
    CMP(strcmp(a->acl_data_type_config, b->acl_data_type_config), "aclDataTypeConfig");
    CMP(strcmp(a->aclprof_aicore_metrics, b->aclprof_aicore_metrics), "aclprofAicoreMetrics");
    CMP(strcmp(a->api_filter, b->api_filter), "api_filter");
    CMP(strcmp(a->kernel_filter, b->kernel_filter), "kernel_filter");
    CMP(a->timelimit != b->timelimit, "timelimit");
    CMP(a->ndomains != b->ndomains ||
            memcmp(a->domains, b->domains, sizeof a->domains[0] * (size_t)a->ndomains),
        "domain");
    CMP(a->torch_prof_stack != b->torch_prof_stack, "torch_prof_stack");
    CMP(a->torch_prof_modules != b->torch_prof_modules, "torch_prof_modules");
    CMP(a->torch_prof_step_num != b->torch_prof_step_num, "torch_prof_step_num");
    CMP(a->profiler_step_num != b->profiler_step_num, "profiler_step_num");
    CMP(a->buffer_bytes != b->buffer_bytes, "buffer_size_kb");
#undef CMP
    if (used >= len && len > 4)
        snprintf(out + len - 4, 4, "...");
    return n;
}

int sp_mhttp_parse_listen(const char *s, struct sockaddr_in *sa)
{
    const char *colon = s ? strrchr(s, ':') : NULL;
    char host[64];
    if (!colon || (size_t)(colon - s) >= sizeof host)
        return -1;
    memcpy(host, s, (size_t)(colon - s));
    host[colon - s] = 0;
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (!colon[1] || *end || port < 0 || port > 65535)
        return -1;
    memset(sa, 0, sizeof *sa);
    sa->sin_family = AF_INET;
    sa->sin_port = htons((uint16_t)port);
    /* An empty host is loopback: serving beyond this host takes an explicit
     * address (0.0.0.0 for every interface). */
    return inet_pton(AF_INET, host[0] ? host : "127.0.0.1", &sa->sin_addr) == 1 ? 0 : -1;
}

const char *sp_mhttp_interfaces(const char *s)
{
    static _Thread_local char buf[96];
    struct sockaddr_in sa;
    if (sp_mhttp_parse_listen(s, &sa) != 0)
        return "?";
    uint32_t a = ntohl(sa.sin_addr.s_addr);
    if ((a >> 24) == 127)
        return "loopback only";
    if (a == 0)
        return "every interface (0.0.0.0): reachable from other hosts";
    char ip[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &sa.sin_addr, ip, sizeof ip);
    snprintf(buf, sizeof buf, "interface %s only: reachable from other hosts", ip);
    return buf;
}
