/* SPDX-License-Identifier: Apache-2.0 */
/*
 * runtime.h — interfaces between the runtime's own files (private):
 * config.c extras, config_edit.c, session.c, watch.c. The contracts shared
 * with other modules stay in internal.h.
 */
#ifndef SERVPROF_RUNTIME_H
#define SERVPROF_RUNTIME_H

#include <stdint.h>

#include "internal.h"

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

/* ---- session.c --------------------------------------------------- */

/* Opens (creates or joins) the session folder of this host and config
 * file under c->prof_dir, and fills s. cfg_path may be NULL (API start
 * without a config file). Returns 0 or a negative code (logged). */
int sp_session_open(sp_session *s, const sp_config *c, const char *cfg_path, uint64_t serial);

/* Leaves the current session. close_generation: collection was turned off
 * through the file, so the next start on this host makes a new folder. */
void sp_session_leave(const sp_session *s, int close_generation);

/* In a fork child: forget the parent's membership without unlocking it. */
void sp_session_atfork_child(void);

/* ---- watch.c ----------------------------------------------------- */

/* What the watcher calls: the runtime's reaction to a file change and its
 * periodic duties (limits). Both run on the watcher thread. */
typedef struct sp_watch_hooks {
    void (*changed)(void);  /* the file's content or identity changed */
    void (*tick)(void);     /* every poll period and on sp_watch_wake() */
} sp_watch_hooks;

/* Starts the watcher thread on path. Returns 0 or a negative code. */
int sp_watch_start(const char *path, const sp_watch_hooks *hooks);
/* Stops and joins it. Must not be called with the runtime mutex held. */
void sp_watch_stop(void);
/* Wakes the thread so that it runs tick() now. Async-signal-safe. */
void sp_watch_wake(void);
/* How many passes the watcher has finished in this process (a pass: look
 * at the file, call changed() if it changed, call tick()). For tests: two
 * more passes after an action mean the watcher has looked since. */
uint64_t sp_watch_passes(void);
/* Nonzero when called on the watcher thread. */
int sp_watch_is_self(void);
void sp_watch_atfork_child(void);

#endif
