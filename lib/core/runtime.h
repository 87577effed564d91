/* SPDX-License-Identifier: Apache-2.0 */
/*
 * runtime.h — interfaces between the runtime's own files (private):
 * session.c, watch.c. The contracts shared with other modules stay in
 * internal.h; the config file's reading and editing are common/config.h.
 */
#ifndef SERVPROF_RUNTIME_H
#define SERVPROF_RUNTIME_H

#include <stdint.h>

#include "internal.h"

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
    /* The file's content or identity changed. Returns nonzero when the
     * answer was not definite (a transient read error: EMFILE, ENOMEM...):
     * the watcher then calls it again on its next pass, changed or not. */
    int (*changed)(void);
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
