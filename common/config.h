/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config.h — the JSON config file: reading and validating it into
 * sp_config (config.c), editing its "enable" (config_edit.c). Common code:
 * the library reads it, the tool checks and edits it (`config check`,
 * `enable`/`disable`).
 */
#ifndef SERVPROF_CONFIG_H
#define SERVPROF_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "servprof.h"

#define SP_PATH_MAX 4096

#define SP_MAX_DOMAINS 32
#define SP_DOMAIN_LEN 64
#define SP_FILTER_LEN 1024
#define SP_DEFAULT_BUFFER_KB 4096

typedef struct sp_config {
    int enable;                     /* 0 / 1 */
    int metric_enable;              /* 0 / 1: live metrics (metrics_*.c) */
    char metric_dir[SP_PATH_MAX];   /* expanded; "" = <prof_dir>/metrics */
    char metric_listen[64];         /* key "metric_port": "ADDR:PORT" this process tries to
                                       serve /metrics on; "" = none */
    int metric_max_conns;           /* key "metric_max_connections": the endpoint's cap */
    int trace_export;               /* request tracing over OTLP (lib/otlp): 1 on, 0 off,
                                       -1 (absent) as MS_TRACE_ENABLE says; live */
    char trace_endpoint[2048];      /* OTLP/HTTP traces URL; "" = the OTEL_* variables */
    char prof_dir[SP_PATH_MAX];     /* expanded (~, ${VAR}) */
    int profiler_level;             /* 10, 20, 30, 40 */
    int host_system_usage_freq;     /* -1 off, 1..50 Hz */
    int npu_memory_usage_freq;      /* -1 off, 1..50 Hz */
    int acl_task_time;              /* 0..3 */
    int acl_prof_task_time_level;   /* 0 = L0, 1 = L1 */
    int acl_prof_task_time_seconds; /* 0 = no limit, else 1..999 */
    char acl_data_type_config[SP_FILTER_LEN];
    char aclprof_aicore_metrics[128];
    char api_filter[SP_FILTER_LEN];    /* ';'-separated substrings */
    char kernel_filter[SP_FILTER_LEN];
    int timelimit;                  /* seconds, 0..7200, 0 = none */
    int ndomains;                   /* 0 = every domain */
    char domains[SP_MAX_DOMAINS][SP_DOMAIN_LEN];
    int torch_prof_stack;
    int torch_prof_modules;
    int torch_prof_step_num;
    int64_t profiler_step_num;      /* 0 = unset (no limit) */
    size_t buffer_bytes;            /* per-thread buffer: key "buffer_size_kb" (64..65536,
                                       default SP_DEFAULT_BUFFER_KB); ours, not the reference's */
} sp_config;

/* Problems found while reading a config: one message per problem. */
typedef struct sp_config_diag {
    int nwarnings;
    int nerrors;   /* > 0: the file could not be used (syntax error, I/O) */
    /* Called once per message (already formatted, no newline). NULL: log. */
    void (*emit)(void *ctx, int is_error, const char *msg);
    void *ctx;
} sp_config_diag;

/* Fills c with every default (prof_dir from $HOME). */
void sp_config_defaults(sp_config *c);

/* Parses JSON text into c (starting from defaults), reporting through d.
 * Returns 0, or SERVPROF_ECONFIG on a syntax error (c then untouched). */
int sp_config_parse(const char *text, size_t len, sp_config *c, sp_config_diag *d);

/* The value of integer or true/false key name of c (0/1 for flags): 0, or
 * -1 when name is not such a key. */
int sp_config_int_key(const sp_config *c, const char *name, int64_t *out);

/* Reads and parses a file. SERVPROF_ENOTFOUND when it does not exist. */
int sp_config_load(const char *path, sp_config *c, sp_config_diag *d);
/* Which interfaces c's metric_port serves, in words ("loopback only",
 * "every interface (0.0.0.0): ..."), or "none" without metric_port. */
const char *sp_config_listen_scope(const sp_config *c);

/* A config file larger than this is a mistake (and is not read). */
#define SP_CONFIG_MAX_BYTES (1u << 20)
/* The jansson flags of every parse of a config file (sp_config_json_load). */
#define SP_CONFIG_JSON_FLAGS JSON_REJECT_DUPLICATES

/* The one JSON parse of config text: the runtime, `config check` and the
 * editor all use it. Returns a new reference to the top-level object, or
 * NULL with the reason in err (for users: no jansson flag names). The
 * json_t type is jansson's; callers include <jansson.h>. */
struct json_t;
struct json_t *sp_config_json_load(const char *text, size_t len, char *err, size_t errlen);

/* What a negative errno from sp_read_file() means for a config file, in
 * words (buf holds the text when it is not a constant). */
const char *sp_config_read_error(int rc, char *buf, size_t len);

/* ---- config.c ---------------------------------------------------- */

/* "ERROR", "INFO", "DETAILED", "VERBOSE" for 10/20/30/40. */
const char *sp_config_level_name(int level);

/* The text of a default config file (collection off). every_key = 0 gives
 * the spec's seven keys (auto-creation), 1 every key we know (config init).
 * Returns the length, or -1 when buf is too small. */
int sp_config_default_text(char *buf, size_t len, int every_key);

/* Creates a missing config file with collection off, atomically, 0640,
 * only when the name ends in ".json" and the folder is writable. Returns
 * 0, or a negative code with a reason in why (for the log). */
int sp_config_create_default(const char *path, char *why, size_t whylen);

/* Names the keys whose values differ between a and b, ignoring "enable",
 * "metric_enable", "metric_dir" and "metric_port" (live, not "at the next start"),
 * as "k1, k2" in out ("" when none). Returns how many differ. */
int sp_config_changed_keys(const sp_config *a, const sp_config *b, char *out, size_t len);

/* ---- config_edit.c ----------------------------------------------- */

/* Sets the top-level "enable" of the JSON file at path to value (0 / 1),
 * keeping every other byte of the file; inserts the key when missing.
 * The result is checked with jansson before the file is replaced
 * atomically. Returns 0 (also when it already had that value: *changed
 * then 0), or a negative code with the reason in err. */
int sp_config_set_enable(const char *path, int value, int *changed, char *err, size_t errlen);

/* The same, reporting the file's warnings (a file with warnings is still
 * used, and edited) through d; NULL: silent. A file the library would
 * reject (syntax, duplicate key, byte-order mark ...) is never written:
 * SERVPROF_ECONFIG with the reason in err. */
int sp_config_set_enable_diag(const char *path, int value, int *changed, sp_config_diag *d,
                              char *err, size_t errlen);

/* The same edit on text in memory: a malloc'ed result in *out (free()).
 * Exposed for the tests. */
int sp_config_edit_enable_text(const char *text, size_t len, int value, char **out,
                               size_t *outlen, char *err, size_t errlen);

/* ---- the "metric_port" value (config.c) ----------------------------- */

struct sockaddr_in;
/* "ADDR:PORT" (IPv4, PORT 0..65535; "" ADDR: loopback, 127.0.0.1; every
 * interface only when asked for, 0.0.0.0) -> sa. Returns 0, or -1 when s
 * is not that. Config validation and the metrics endpoint
 * (lib/metrics/metrics_http.c) read the value with it. */
int sp_mhttp_parse_listen(const char *s, struct sockaddr_in *sa);
/* Which interfaces "ADDR:PORT" serves, in words: "loopback only",
 * "every interface (0.0.0.0): ...", "interface ADDR only: ..."; "?" when
 * s is bad. A static string, or a thread's buffer valid until its next
 * call. */
const char *sp_mhttp_interfaces(const char *s);

#endif
